// Package urltrace records URL fingerprint traces for the cache study
// (docs/cache-study.md): the fingerprints the dedup service receives (the
// "full" trace) and the ones the host splitter sends to other partitions (the
// "cross" subtrace), in the order they were seen, per partition.
//
// File format (all integers little-endian):
//
//	header, 16 bytes:
//	  magic    "TRAWLTR"          7 bytes
//	  version  1                  1 byte
//	  kind     'F' full, 'X' cross 1 byte
//	  reserved zero               3 bytes
//	  partitions (count)          uint32
//	blocks, appended one per Write:
//	  partition                   uvarint
//	  n, 1..MaxBlock              uvarint
//	  fingerprints                n × 8 bytes
//	  crc32c of the bytes above   4 bytes
//
// Fingerprints are hashes, so they do not compress: 8 bytes each plus a few
// per block is within a percent of the entropy. A block is written whole in
// one call, so the blocks of a partition are in the order it saw them; a
// crash can tear only the last block, which the reader drops (Reader.Torn).
package urltrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Kind says which trace a file holds.
type Kind byte

const (
	Full  Kind = 'F' // every fingerprint dedup received
	Cross Kind = 'X' // fingerprints the host splitter sent to other partitions
)

func (k Kind) String() string {
	switch k {
	case Full:
		return "full"
	case Cross:
		return "cross"
	}
	return fmt.Sprintf("kind(%#x)", byte(k))
}

const (
	magic      = "TRAWLTR"
	version    = 1
	headerSize = 16
	// MaxBlock bounds the fingerprints per block, so that a corrupt length
	// cannot make the reader allocate gigabytes; Write splits longer slices.
	MaxBlock = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a trace file's fixed header.
type Header struct {
	Kind       Kind
	Partitions int // the crawl's partition count
}

// ErrCorrupt is returned for a file that is not a trace, or whose damage is
// not at its end.
var ErrCorrupt = errors.New("urltrace: corrupt trace")

// Writer appends blocks to a trace. It is safe for concurrent use: each
// Write is one block, written whole.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	c   io.Closer // nil when the caller owns the underlying writer
	buf []byte
	err error // sticky
}

// NewWriter writes h to w and returns a Writer appending to it. Close flushes
// but does not close w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.Kind != Full && h.Kind != Cross {
		return nil, fmt.Errorf("urltrace: unknown kind %v", h.Kind)
	}
	if h.Partitions < 1 || h.Partitions > 1<<31-1 {
		return nil, fmt.Errorf("urltrace: partitions %d out of range", h.Partitions)
	}
	var hd [headerSize]byte
	copy(hd[:], magic)
	hd[7] = version
	hd[8] = byte(h.Kind)
	binary.LittleEndian.PutUint32(hd[12:], uint32(h.Partitions))
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(hd[:]); err != nil {
		return nil, err
	}
	return &Writer{w: bw}, nil
}

// Create makes a new trace file in dir named <kind>-<UTC time>-<pid>.urltrace
// (one per process start, so a restart never appends behind a torn block)
// and returns its Writer and path. Close closes the file.
func Create(dir string, h Header) (*Writer, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	name := fmt.Sprintf("%s-%s-%d.urltrace", h.Kind, time.Now().UTC().Format("20060102T150405.000000000Z"), os.Getpid())
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, "", err
	}
	w, err := NewWriter(f, h)
	if err != nil {
		f.Close()
		return nil, "", err
	}
	w.c = f
	return w, path, nil
}

// Write appends fps as seen by partition, in blocks of at most MaxBlock.
// After the first error every Write returns it.
func (w *Writer) Write(partition int, fps []uint64) error {
	if w == nil || len(fps) == 0 {
		return nil
	}
	if partition < 0 {
		return fmt.Errorf("urltrace: negative partition %d", partition)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(fps) > 0 && w.err == nil {
		n := min(len(fps), MaxBlock)
		b := w.buf[:0]
		b = binary.AppendUvarint(b, uint64(partition))
		b = binary.AppendUvarint(b, uint64(n))
		for _, fp := range fps[:n] {
			b = binary.LittleEndian.AppendUint64(b, fp)
		}
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
		_, w.err = w.w.Write(b)
		w.buf = b
		fps = fps[n:]
	}
	return w.err
}

// Flush writes buffered blocks to the underlying writer.
func (w *Writer) Flush() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Close flushes, and closes the file if Create opened it.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	err := w.Flush()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
		w.c = nil
	}
	return err
}

// Reader reads a trace block by block.
type Reader struct {
	r      *bufio.Reader
	h      Header
	block  []byte
	fps    []uint64
	torn   bool
	blocks int
}

// NewReader reads and checks the header.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var hd [headerSize]byte
	if _, err := io.ReadFull(br, hd[:]); err != nil {
		return nil, fmt.Errorf("%w: short header: %v", ErrCorrupt, err)
	}
	if string(hd[:7]) != magic {
		return nil, fmt.Errorf("%w: not a trace file (bad magic)", ErrCorrupt)
	}
	if hd[7] != version {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, hd[7], version)
	}
	h := Header{Kind: Kind(hd[8]), Partitions: int(binary.LittleEndian.Uint32(hd[12:]))}
	if h.Kind != Full && h.Kind != Cross || h.Partitions < 1 {
		return nil, fmt.Errorf("%w: bad header (kind %#x, partitions %d)", ErrCorrupt, hd[8], h.Partitions)
	}
	return &Reader{r: br, h: h}, nil
}

// Header is the file's header.
func (r *Reader) Header() Header { return r.h }

// Torn reports whether the file ended in a damaged or incomplete block,
// which Next dropped (what a crash mid-write leaves).
func (r *Reader) Torn() bool { return r.torn }

// Next returns the next block. The slice is reused by the following call.
// At the end of the file, torn tail or not, it returns io.EOF; damage
// followed by more data is ErrCorrupt.
func (r *Reader) Next() (partition int, fps []uint64, err error) {
	if _, err := r.r.Peek(1); err == io.EOF {
		return 0, nil, io.EOF
	}
	b := r.block[:0]
	part, b, err := readUvarint(r.r, b)
	if err != nil {
		return r.damaged(err)
	}
	n, b, err := readUvarint(r.r, b)
	if err != nil {
		return r.damaged(err)
	}
	if n < 1 || n > MaxBlock || part > 1<<31-1 {
		return r.damaged(fmt.Errorf("block header partition %d, %d fingerprints", part, n))
	}
	start := len(b)
	b = append(b, make([]byte, 8*int(n)+4)...)
	if _, err := io.ReadFull(r.r, b[start:]); err != nil {
		return r.damaged(err)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return r.damaged(errors.New("checksum mismatch"))
	}
	r.block = b
	r.fps = r.fps[:0]
	for p := body[start:]; len(p) > 0; p = p[8:] {
		r.fps = append(r.fps, binary.LittleEndian.Uint64(p))
	}
	r.blocks++
	return int(part), r.fps, nil
}

// damaged decides between a torn tail and corruption: a crash leaves a
// partial block, perhaps followed by zeros the filesystem allocated, and
// nothing else after it.
func (r *Reader) damaged(cause error) (int, []uint64, error) {
	for {
		c, err := r.r.ReadByte()
		if err == io.EOF {
			r.torn = true
			return 0, nil, io.EOF
		}
		if err != nil {
			return 0, nil, err
		}
		if c != 0 {
			return 0, nil, fmt.Errorf("%w: block %d: %v", ErrCorrupt, r.blocks+1, cause)
		}
	}
}

func readUvarint(r *bufio.Reader, b []byte) (uint64, []byte, error) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, b, err
		}
		b = append(b, c)
		if c < 0x80 {
			return x | uint64(c)<<s, b, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, b, errors.New("varint overflows")
}

// AllPartitions selects every partition in ReadFile.
const AllPartitions = -1

// ReadFile reads the fingerprints of one partition (or AllPartitions, in
// file order) from the trace at path.
func ReadFile(path string, partition int) (fps []uint64, h Header, torn bool, err error) {
	h, torn, err = eachBlock(path, func(size int64) {
		if partition == AllPartitions {
			fps = make([]uint64, 0, max(size-headerSize, 0)/8)
		}
	}, func(p int, block []uint64) {
		if partition == AllPartitions || p == partition {
			fps = append(fps, block...)
		}
	})
	return fps, h, torn, err
}

// ReadPartitions reads the trace at path in one pass and returns each
// partition's fingerprints in order.
func ReadPartitions(path string) (parts map[int][]uint64, h Header, torn bool, err error) {
	parts = map[int][]uint64{}
	h, torn, err = eachBlock(path, nil, func(p int, block []uint64) {
		parts[p] = append(parts[p], block...)
	})
	return parts, h, torn, err
}

// eachBlock opens the trace at path, tells sized its size (when it is not
// nil), and hands every block to fn in file order.
func eachBlock(path string, sized func(int64), fn func(p int, block []uint64)) (Header, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, false, err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return Header{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if st, err := f.Stat(); err == nil && sized != nil {
		sized(st.Size())
	}
	for {
		p, block, err := r.Next()
		if err == io.EOF {
			return r.Header(), r.Torn(), nil
		}
		if err != nil {
			return r.Header(), false, fmt.Errorf("%s: %w", path, err)
		}
		fn(p, block)
	}
}
