package hostileweb

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// Compression bombs: 50 MiB of zeros in each coding the fetcher decodes,
// built once; the fetcher's own tests use them too (Bomb).

const bombMiB = 50

// BombBytes is what every bomb decodes to: 50 MiB of zeros.
const BombBytes = bombMiB << 20

// Bomb returns the bomb in a Content-Encoding: gzip, deflate (zlib
// framing), deflate-raw (a raw deflate stream, as some servers send for
// "deflate") or br; nil for any other.
func Bomb(encoding string) []byte {
	switch encoding {
	case "gzip":
		return gzipBomb()
	case "deflate":
		return zlibBomb()
	case "deflate-raw":
		return rawBomb()
	case "br":
		return []byte(brotliBomb)
	}
	return nil
}

var (
	rawBomb  = sync.OnceValue(func() []byte { return zeroDeflate(bombMiB) })
	gzipBomb = sync.OnceValue(func() []byte { return gzipWrap(rawBomb(), bombMiB<<20) })
	zlibBomb = sync.OnceValue(func() []byte { return zlibWrap(rawBomb(), bombMiB<<20) })
)

// zeroDeflate returns a raw deflate stream of mib MiB of zeros: two MiB
// compressed, each ended by a sync flush, and the second repeated (it only
// copies zeros from the window, so it decodes to one more MiB anywhere).
func zeroDeflate(mib int) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	zeros := make([]byte, 1<<20)
	w.Write(zeros)
	w.Flush()
	first := b.Len()
	w.Write(zeros)
	w.Flush()
	second := b.Len()
	w.Close() // the final, empty block
	all := b.Bytes()
	out := append([]byte(nil), all[:second]...)
	for i := 2; i < mib; i++ {
		out = append(out, all[first:second]...)
	}
	return append(out, all[second:]...)
}

// gzipWrap and zlibWrap frame a raw deflate stream of n zero bytes.
func gzipWrap(raw []byte, n int) []byte {
	crc := uint32(0)
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zeros) {
		crc = crc32.Update(crc, crc32.IEEETable, zeros[:min(left, len(zeros))])
	}
	out := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, raw...)
	out = binary.LittleEndian.AppendUint32(out, crc)
	return binary.LittleEndian.AppendUint32(out, uint32(n))
}

func zlibWrap(raw []byte, n int) []byte {
	out := append([]byte{0x78, 0x01}, raw...)
	// Adler-32 of n zeros: a stays 1, b adds it n times.
	return binary.BigEndian.AppendUint32(out, uint32(n%65521)<<16|1)
}

// brotliBomb is 52428800 zero bytes (50 MiB), brotli-compressed (89 bytes,
// a 4 MiB window): brotli.NewWriterLevel(&b, 4) given 50 MiB of zeros.
const brotliBomb = "\xcb\xff\xff?\x00$\x00\xe2\xb1@r\xef\xff\xf8\xff\xff\a\x80\x04@\x1c\x16\x80\xee\xfd\x1f\xff\xff\xff\x00\x90\x00\x88\xc3\x02\xd0\xbd\xff\xe3\xff\xff\x1f\x00\x12\x00qX\x00\xba\xf7\x7f\xfc\xff\xff\x03@\x02 \x0e\v@\xf7\xfe\x8f\xff\xff\x7f\x00H\x00\xc4a\x01\xe8\xde\xff\xe5\xff\xff\a\x00\t\x808,\x00\xdd\xfb\x0f"
