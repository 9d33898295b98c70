package fetcher

// Reading a response: the minimum transfer rate, the header deadline, the
// body cap, the media types downloaded and the headers kept.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// rateWatch counts a body's bytes as they are read and ends the request
// (cancel with a *SlowError) when a whole window brought fewer than
// rate x window of them.
type rateWatch struct {
	io.ReadCloser
	n    atomic.Int64
	done chan struct{}
}

func watchRate(body io.ReadCloser, rate int64, window time.Duration, cancel context.CancelCauseFunc) *rateWatch {
	w := &rateWatch{ReadCloser: body, done: make(chan struct{})}
	start := time.Now()
	go func() {
		t := time.NewTicker(window)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
			}
			n := w.n.Load()
			floor := int64(float64(rate) * window.Seconds())
			if got := n - last; got < floor {
				cancel(&SlowError{Rate: rate, Window: window, Got: got, Received: n, Elapsed: time.Since(start)})
				return
			}
			last = n
		}
	}()
	return w
}

func (w *rateWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	w.n.Add(int64(n))
	return n, err
}

// stop ends the watch (the body was read, or given up).
func (w *rateWatch) stop() { close(w.done) }

// armHeaderTimer starts HeaderTimeout once a connection is ready; when it
// runs out first, the request is canceled with errHeaderTimeout.
func (c *HTTPClient) armHeaderTimer(ctx context.Context, a *attempt, cancel context.CancelCauseFunc) {
	if !a.headers.CompareAndSwap(headersNone, headersWaiting) {
		return // a retry on another connection: the first timer still runs
	}
	d := c.opts.HeaderTimeout
	if d <= 0 || d >= c.opts.Timeout {
		return
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return // the request's own deadline comes first
	}
	a.timer.Store(time.AfterFunc(d, func() {
		if a.headers.CompareAndSwap(headersWaiting, headersTimedOut) {
			cancel(errHeaderTimeout)
		}
	}))
}

// readBody reads resp's body into out: skipped for its type, decoded, capped.
func (c *HTTPClient) readBody(ctx context.Context, resp *http.Response, out *Response, sitemap bool) {
	hasBody := mayHaveBody(resp.StatusCode)
	mt := mediaType(out.ContentType)
	if hasBody && mt != "" && !c.typeAllowed(mt) && !(sitemap && slices.Contains(SitemapTypes, mt)) {
		out.Skipped = fmt.Sprintf("content type %s not in the allow list", mt)
		return
	}
	r, wire, encoding := decodeBody(resp.Header, resp.Body, c.opts.MaxCompressedBytes)
	out.Encoding = capHeader(encoding) // the codings of every Content-Encoding line
	hint := resp.ContentLength
	if wire != nil {
		hint = -1 // the announced length is the compressed one
	}
	if hasBody && mt == "" && encoding == "" {
		// No usable Content-Type: judge by the first (decoded) bytes.
		br := bufio.NewReaderSize(r, sniffLen)
		head, err := br.Peek(sniffLen)
		if err == nil || err == io.EOF || errors.Is(err, errCompressedCap) {
			out.SniffedType = http.DetectContentType(head)
			if st := mediaType(out.SniffedType); !c.typeAllowed(st) && !(sitemap && slices.Contains(SitemapTypes, st)) {
				out.Skipped = fmt.Sprintf("content type %s (sniffed) not in the allow list", st)
				return
			}
		}
		// On another error, read on: readCapped reports it with what came.
		r = br
	}
	body, truncated, err := readCapped(r, c.opts.MaxBodyBytes, hint)
	if wire != nil {
		if errors.Is(err, errCompressedCap) {
			truncated, err = true, nil
		}
		err = wire.decodeErr(err, strings.Join(contentCodings(resp.Header), ", "))
	}
	out.Body, out.Truncated = body, truncated
	if err != nil {
		out.Err = c.bodyErr(ctx, err, len(body))
	}
}

// mayHaveBody reports whether a response with this status can carry a body.
func mayHaveBody(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// mediaType returns ct's media type, lower case and without parameters, or ""
// when ct does not name one ("", "html", "none").
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if typ, sub, ok := strings.Cut(mt, "/"); !ok || typ == "" || sub == "" {
		return ""
	}
	return mt
}

func (c *HTTPClient) typeAllowed(mt string) bool {
	for _, a := range c.allowed {
		if a == mt || a == "*/*" {
			return true
		}
		if typ, ok := strings.CutSuffix(a, "/*"); ok && strings.HasPrefix(mt, typ+"/") {
			return true
		}
	}
	return false
}

// readCapped reads at most limit bytes of r; it reads one byte more to tell a
// body of exactly limit bytes from a longer, truncated one. hint is the
// announced length, used only to size the buffer (never beyond limit).
func readCapped(r io.Reader, limit, hint int64) (body []byte, truncated bool, err error) {
	size := int64(512)
	if hint >= 0 {
		size = min(hint, limit) + 1 // room for the EOF read
	}
	b := make([]byte, 0, size)
	lr := io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, false, err
		}
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}

// keepHeaders copies the first value of each kept header, bounded in length.
func keepHeaders(h http.Header) map[string]string {
	var out map[string]string
	for _, name := range keptHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		v = capHeader(v)
		if out == nil {
			out = make(map[string]string)
		}
		out[name] = v
	}
	return out
}

// capHeader bounds a kept header value to maxHeaderValue bytes.
func capHeader(v string) string {
	if len(v) > maxHeaderValue {
		return strings.ToValidUTF8(v[:maxHeaderValue], "")
	}
	return v
}
