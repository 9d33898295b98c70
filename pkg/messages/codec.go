package messages

import "fmt"

// The wire format stays JSON (docs/subjects.md, "Wire format"): what changed
// is the codec. github.com/goccy/go-json (codec_goccy.go) writes byte for
// byte what encoding/json writes for these types (omitempty, omitzero,
// time.Time, time.Duration, HTML escaping, map key order) and decodes what
// encoding/json decodes, about three times faster per page; codec_test.go
// holds it to that. Built with -tags stdjson, Trawler uses encoding/json
// (codec_std.go): the same wire, for a rollback without a protocol change.

// message is implemented by every message type: a pointer to its schema
// version field V.
type message interface{ version() *int }

// stamp sets a message's V to Version when it is zero (the caller left it
// out) and refuses any other version: every message carries the version it
// was written in, and this writer writes only Version.
func stamp(v message) error {
	p := v.version()
	if *p == 0 {
		*p = Version
	}
	if *p != Version {
		return fmt.Errorf("encode %T: schema version %d (want %d)", v, *p, Version)
	}
	return nil
}

// Encode marshals a message as JSON, the bytes encoding/json.Marshal writes.
// It sets the message's V to Version when V is zero, so a publisher need not
// name the version; a V other than 0 or Version is refused. Every service
// encodes its messages here (pages.fetched metadata with EncodePage).
func Encode(v message) ([]byte, error) {
	if err := stamp(v); err != nil {
		return nil, err
	}
	data, err := marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return data, nil
}

// EncodePage marshals a page's metadata for its Trawler-Page header: JSON
// without HTML escaping (the same JSON to a reader), so that a URL's "&"
// takes one byte of the header, not six. The bytes are those of an
// encoding/json Encoder with SetEscapeHTML(false), without its newline. Like
// Encode, it sets V to Version when V is zero.
func EncodePage(p *Page) ([]byte, error) {
	if err := stamp(p); err != nil {
		return nil, err
	}
	data, err := marshalNoHTMLEscape(p)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", p, err)
	}
	return data, nil
}

// Decode unmarshals a JSON message and checks its version: a reader ignores
// fields it does not know and refuses a version it does not know.
func Decode(data []byte, v message) error {
	if err := unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	if got := *v.version(); got != Version {
		return fmt.Errorf("decode %T: unsupported schema version %d (want %d)", v, got, Version)
	}
	return nil
}

// Message kinds: what each subject carries (pkg/subjects' Names.Kind tells
// a subject's kind), as in the Trawler-Schema header ("page/v1") and the
// schema files of docs/schema (<kind>.v1.schema.json).
const (
	KindDiscovered = "discovered" // Discovered, on discovered.<p>
	KindNew        = "new"        // NewURLs, on frontier.<p>.new
	KindDone       = "done"       // FetchDone, on frontier.<p>.done
	KindTask       = "task"       // FetchTask, on fetch.<p>
	KindPage       = "page"       // Page, in the Trawler-Page header of pages.fetched
	KindParsed     = "parsed"     // Parsed, on pages.parsed
	KindDeadLetter = "deadletter" // DeadLetter, on dlq.<service>
)

// Kinds lists every message kind, in pipeline order.
var Kinds = []string{KindDiscovered, KindNew, KindTask, KindDone, KindPage, KindParsed, KindDeadLetter}

// newKind returns a new zero message of kind (a *Discovered for
// KindDiscovered, ...), or nil for a kind it does not know.
func newKind(kind string) message {
	switch kind {
	case KindDiscovered:
		return &Discovered{}
	case KindNew:
		return &NewURLs{}
	case KindDone:
		return &FetchDone{}
	case KindTask:
		return &FetchTask{}
	case KindPage:
		return &Page{}
	case KindParsed:
		return &Parsed{}
	case KindDeadLetter:
		return &DeadLetter{}
	}
	return nil
}

// DecodeKind decodes a message of kind: a pointer to its type (*Discovered,
// *NewURLs, *FetchTask, *FetchDone, *Page, *Parsed or *DeadLetter). For
// KindPage, data is the Trawler-Page header's value, since a page's data is
// its body. The errors are Decode's, or one naming an unknown kind.
func DecodeKind(kind string, data []byte) (any, error) {
	m := newKind(kind)
	if m == nil {
		return nil, fmt.Errorf("decode: unknown message kind %q (known: %v)", kind, Kinds)
	}
	if kind == KindPage && len(data) == 0 {
		return nil, fmt.Errorf("page message without %s header", HeaderPage)
	}
	if err := Decode(data, m); err != nil {
		return nil, err
	}
	return m, nil
}
