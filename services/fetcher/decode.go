package fetcher

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// The client asks for compressed bodies and decodes them itself
// (Transport.DisableCompression), so that both caps hold: MaxCompressedBytes on
// what is read from the network, MaxBodyBytes on what is decoded. Decoding is
// streamed: a compression bomb costs a decoder's window plus MaxBodyBytes,
// never its expanded size.

// acceptEncoding lists the codings decodeBody handles.
const acceptEncoding = "gzip, deflate, br"

// maxCodings bounds a chain such as "Content-Encoding: gzip, br": each layer
// costs a decoder window. Longer chains are kept raw, like unknown codings.
const maxCodings = 2

// errCompressedCap stops a compressed body at MaxCompressedBytes. It never
// reaches a Response: the body is then complete as far as the cap allows, and
// marked Truncated.
var errCompressedCap = errors.New("compressed body exceeds its cap")

// DecodeError is a body read failure caused by content that does not decode
// with its Content-Encoding (a corrupt or truncated gzip, deflate or brotli
// stream); its ErrKind is "protocol". The bytes decoded before it are kept.
type DecodeError struct {
	Encoding string // the Content-Encoding, lower case, e.g. "gzip"
	Err      error
}

func (e *DecodeError) Error() string { return "invalid " + e.Encoding + " content: " + e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// contentCodings returns the codings of h's Content-Encoding in the order they
// were applied, lower case, without "identity".
func contentCodings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

func knownCoding(c string) bool {
	switch c {
	case "gzip", "x-gzip", "deflate", "br":
		return true
	}
	return false
}

// decodeBody returns a reader of body decoded per h's Content-Encoding.
//
// With no coding it returns body itself. With codings it can decode it returns
// the decoder chain and the wireReader counting and capping the compressed
// bytes read. Otherwise (an unknown coding, or a chain longer than maxCodings)
// it returns body itself, and encoding names the codings the bytes are left in.
func decodeBody(h http.Header, body io.Reader, maxWire int64) (r io.Reader, wire *wireReader, encoding string) {
	codings := contentCodings(h)
	if len(codings) == 0 {
		return body, nil, ""
	}
	joined := strings.Join(codings, ", ")
	if len(codings) > maxCodings {
		return body, nil, joined
	}
	for _, c := range codings {
		if !knownCoding(c) {
			return body, nil, joined
		}
	}
	wire = &wireReader{r: body, left: maxWire}
	r = wire
	// The last coding listed was applied last: undo it first.
	for i := len(codings) - 1; i >= 0; i-- {
		r = &lazyDecoder{coding: codings[i], src: bufio.NewReader(r)}
	}
	return r, wire, ""
}

// decodeErr wraps err, a failed read of a decoded body, in a DecodeError
// unless it came from the network (the wire) or the compressed cap.
func (w *wireReader) decodeErr(err error, encoding string) error {
	if err == nil || errors.Is(err, errCompressedCap) || (w.err != nil && errors.Is(err, w.err)) {
		return err
	}
	return &DecodeError{Encoding: encoding, Err: err}
}

// wireReader reads the compressed body, at most left bytes of it, and notes
// the error the body returned, so that decodeErr can tell a network failure
// from a decoding one.
type wireReader struct {
	r      io.Reader
	left   int64
	capped bool
	err    error // the first error other than io.EOF returned by r
}

func (w *wireReader) Read(p []byte) (int, error) {
	if w.capped {
		return 0, errCompressedCap
	}
	if w.left <= 0 {
		// At the cap: one more byte says whether the body goes beyond it.
		var one [1]byte
		n, err := w.r.Read(one[:])
		if n > 0 {
			w.capped = true
			return 0, errCompressedCap
		}
		w.note(err)
		return 0, err
	}
	if int64(len(p)) > w.left {
		p = p[:w.left]
	}
	n, err := w.r.Read(p)
	w.left -= int64(n)
	w.note(err)
	return n, err
}

func (w *wireReader) note(err error) {
	if err != nil && err != io.EOF && w.err == nil {
		w.err = err
	}
}

// lazyDecoder opens its decoder on the first read, once a byte is there: a
// body that is empty despite its Content-Encoding (a HEAD-like 200, a 204
// sent with "Content-Encoding: gzip") decodes to nothing instead of failing
// on a missing header, as browsers have it.
type lazyDecoder struct {
	coding string
	src    *bufio.Reader
	r      io.Reader
	err    error
}

func (d *lazyDecoder) Read(p []byte) (int, error) {
	if d.r == nil {
		if d.err != nil {
			return 0, d.err
		}
		if _, err := d.src.Peek(1); err != nil {
			d.err = err
			return 0, err
		}
		d.r, d.err = openDecoder(d.coding, d.src)
		if d.err != nil {
			return 0, d.err
		}
	}
	return d.r.Read(p)
}

func openDecoder(coding string, src *bufio.Reader) (io.Reader, error) {
	switch coding {
	case "gzip", "x-gzip":
		z, err := gzip.NewReader(src)
		if err != nil {
			return nil, err
		}
		z.Multistream(false)
		return &gzipMembers{src: src, z: z}, nil
	case "deflate":
		// "deflate" should be zlib (RFC 9110), but some servers send raw
		// deflate; browsers accept both, telling them apart by the header.
		if b, _ := src.Peek(2); isZlibHeader(b) {
			return zlib.NewReader(src)
		}
		return flate.NewReader(src), nil
	case "br":
		return brotli.NewReader(src), nil
	}
	return nil, errors.New("unsupported content coding " + coding)
}

// isZlibHeader reports whether b starts a zlib stream (RFC 1950): deflate
// method, window at most 32 KiB, and a header checksum that divides by 31.
func isZlibHeader(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

// gzipMembers decodes a gzip stream member by member, like a browser: a
// following member is decoded, and anything after the last one that is not a
// gzip member (padding, junk) is ignored instead of failing the body.
type gzipMembers struct {
	src *bufio.Reader
	z   *gzip.Reader
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		n, err := g.z.Read(p)
		if err != io.EOF {
			return n, err
		}
		if b, _ := g.src.Peek(2); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			return n, io.EOF
		}
		if err := g.z.Reset(g.src); err != nil {
			return n, err
		}
		g.z.Multistream(false)
		if n > 0 {
			return n, nil
		}
	}
}
