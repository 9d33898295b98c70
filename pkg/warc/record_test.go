package warc

import (
	"strings"
	"testing"
	"time"
)

// crlf turns the readable test texts into the wire's line ends.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

func TestDigestVectors(t *testing.T) {
	// SHA-1 of "" and "abc" (FIPS 180 test vectors) in base32.
	for in, want := range map[string]string{
		"":    "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
		"abc": "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5",
	} {
		if got := Digest([]byte(in)); got != want {
			t.Errorf("Digest(%q) = %s, want %s", in, got, want)
		}
	}
	if Digest([]byte("a"), []byte("bc")) != Digest([]byte("abc")) {
		t.Error("Digest of parts differs from the digest of the whole")
	}
}

// The warcinfo example of WARC 1.1 section 6.2, with its folded lines
// unfolded (this writer never folds). The standard's Content-Length (381)
// does not match its own example text, whichever line ends are assumed, so
// the length and digest here were computed independently (Python hashlib and
// base64) from the CRLF text.
func TestMarshalStandardWarcinfo(t *testing.T) {
	block, err := Fields(
		Field{"software", "Heritrix 1.12.0 http://crawler.archive.org"},
		Field{"hostname", "crawling017.archive.org"},
		Field{"ip", "207.241.227.234"},
		Field{"isPartOf", "testcrawl-20050708"},
		Field{"description", "testcrawl with WARC output"},
		Field{"operator", "IA_Admin"},
		Field{"http-header-user-agent", "Mozilla/5.0 (compatible; heritrix/1.4.0 +http://crawler.archive.org)"},
		Field{"format", "WARC file version 1.1"},
		Field{"conformsTo", "http://www.archive.org/documents/WarcFileFormat-1.1.html"},
	)
	if err != nil {
		t.Fatal(err)
	}
	r := &Record{
		Type: TypeWarcinfo, ID: "<urn:uuid:d7ae5c10-e6b3-4d27-967d-34780c58ba39>",
		Date: time.Date(2016, 9, 19, 17, 20, 14, 0, time.UTC), ContentType: ContentTypeFields, Payload: block,
	}
	got, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := crlf(`WARC/1.1
WARC-Type: warcinfo
WARC-Record-ID: <urn:uuid:d7ae5c10-e6b3-4d27-967d-34780c58ba39>
WARC-Date: 2016-09-19T17:20:14Z
Content-Type: application/warc-fields
WARC-Block-Digest: sha1:XP77UEXKCDJY6FNMKABWQIHRMKHHOFQW
Content-Length: 396

software: Heritrix 1.12.0 http://crawler.archive.org
hostname: crawling017.archive.org
ip: 207.241.227.234
isPartOf: testcrawl-20050708
description: testcrawl with WARC output
operator: IA_Admin
http-header-user-agent: Mozilla/5.0 (compatible; heritrix/1.4.0 +http://crawler.archive.org)
format: WARC file version 1.1
conformsTo: http://www.archive.org/documents/WarcFileFormat-1.1.html


`)
	if string(got) != want {
		t.Errorf("warcinfo record:\n%q\nwant\n%q", got, want)
	}
	p, err := parseRecord(got)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if string(p.Block) != string(block) || p.Get("warc-type") != "warcinfo" {
		t.Errorf("read back block %q type %q", p.Block, p.Get("WARC-Type"))
	}
}

// The request example of WARC 1.1 section 6.4: an HTTP message whose payload
// (the entity body) is empty, so the payload digest is SHA-1 of nothing.
func TestMarshalStandardRequest(t *testing.T) {
	head := crlf(`GET /images/logoc.jpg HTTP/1.0
User-Agent: Mozilla/5.0 (compatible; heritrix/1.10.0)
From: stack@example.org
Connection: close
Referer: http://www.archive.org/
Host: www.archive.org
Cookie: PHPSESSID=009d7bb11022f80605aa87e18224d824

`)
	r := &Record{
		Type: TypeRequest, ID: "<urn:uuid:4885803b-eebd-4b27-a090-144450c11594>",
		Date:      time.Date(2016, 9, 19, 17, 20, 24, 0, time.UTC),
		TargetURI: "http://www.archive.org/images/logoc.jpg", ContentType: ContentTypeHTTPRequest,
		Fields: []Field{{"WARC-Concurrent-To", "<urn:uuid:92283950-ef2f-4d72-b224-f54c6ec90bb0>"}},
		Head:   []byte(head),
	}
	got, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := crlf(`WARC/1.1
WARC-Type: request
WARC-Record-ID: <urn:uuid:4885803b-eebd-4b27-a090-144450c11594>
WARC-Date: 2016-09-19T17:20:24Z
WARC-Target-URI: http://www.archive.org/images/logoc.jpg
Content-Type: application/http;msgtype=request
WARC-Concurrent-To: <urn:uuid:92283950-ef2f-4d72-b224-f54c6ec90bb0>
WARC-Block-Digest: sha1:CSG7DYE7C4XLRRXDOVHLZZISEHBL7ANK
WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ
Content-Length: 242

`) + head + "\r\n\r\n"
	if string(got) != want {
		t.Errorf("request record:\n%q\nwant\n%q", got, want)
	}
}

func TestResponseDigestsAndLength(t *testing.T) {
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
	r := &Record{Type: TypeResponse, TargetURI: "http://example.org/", ContentType: ContentTypeHTTPResponse,
		Head: head, Payload: []byte("abc"), Date: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)}
	raw, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Get("WARC-Payload-Digest"); got != "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5" {
		t.Errorf("payload digest %s, want SHA-1 of abc", got)
	}
	if got, want := p.Get("Content-Length"), "48"; got != want {
		t.Errorf("Content-Length %s, want %s (head 45 + payload 3)", got, want)
	}
	if got := p.Get("WARC-Date"); got != "2026-01-02T03:04:05.123456Z" {
		t.Errorf("WARC-Date %s", got)
	}
	if !strings.HasPrefix(r.ID, "<urn:uuid:") || len(r.ID) != len("<urn:uuid:4885803b-eebd-4b27-a090-144450c11594>") || r.ID[24] != '4' {
		t.Errorf("record ID %s is not a version 4 UUID URN", r.ID)
	}
	if NewID() == NewID() {
		t.Error("two record IDs are equal")
	}
}

func TestMarshalRefusesHeaderInjection(t *testing.T) {
	for _, r := range []*Record{
		{Type: TypeResponse, TargetURI: "http://example.org/\r\nWARC-Type: revisit"},
		{Type: TypeResponse, TargetURI: "http://example.org/\x00"},
		{Type: TypeResponse, Fields: []Field{{"Bad Name", "x"}}},
		{Type: TypeResponse, Fields: []Field{{"X", "line\nbreak"}}},
		{},
	} {
		if _, err := Marshal(r); err == nil {
			t.Errorf("Marshal(%+v) succeeded, want an error", r)
		}
	}
}

func TestParseRecordRejectsDamage(t *testing.T) {
	good, _ := Marshal(&Record{Type: TypeResource, TargetURI: "http://example.org/", Payload: []byte("hello")})
	for name, raw := range map[string]string{
		"short block":   strings.Replace(string(good), "hello", "hell", 1),
		"changed byte":  strings.Replace(string(good), "hello", "jello", 1),
		"no end marker": strings.TrimSuffix(string(good), "\r\n"),
		"bad version":   strings.Replace(string(good), "WARC/1.1", "WARC/9", 1),
	} {
		if _, err := parseRecord([]byte(raw)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}
