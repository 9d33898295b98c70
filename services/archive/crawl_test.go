package archive_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/warc"
)

// site is a small web with every kind of outcome a WARC must represent: HTML
// pages, a redirect, a 404, a 500, a body past --max-body, a type whose body
// is not downloaded, and a host that refuses connections.
func site(t *testing.T) (*testsite.Site, []string, string) {
	s := testsite.New()
	a := s.AddHost(t, "a", "127.0.0.2")
	b := s.AddHost(t, "b", "127.0.0.3")
	dead := "http://127.0.0.6:9/"
	a.Set("/", testsite.Page{Links: []string{a.URL("/a1"), a.URL("/a2?q=1&r=%C3%A9"), a.URL("/moved"), a.URL("/missing"),
		a.URL("/doc.pdf"), a.URL("/big"), b.URL("/"), dead}})
	a.Set("/a1", testsite.Page{Links: []string{a.URL("/")}})
	a.Set("/a2?q=1&r=%C3%A9", testsite.Page{Links: []string{a.URL("/a1")}})
	a.Set("/moved", testsite.Page{Redirect: a.URL("/a3")})
	a.Set("/a3", testsite.Page{Body: "plain text \x00\xff bytes", Type: "text/plain"})
	a.Set("/doc.pdf", testsite.Page{Type: "application/pdf", Body: "%PDF-1.4"})
	a.Set("/big", testsite.Page{Links: []string{a.URL("/a1")}, Size: 100 << 10})
	b.Set("/", testsite.Page{Links: []string{b.URL("/error")}})
	b.Set("/error", testsite.Page{Status: 500})
	return s, []string{a.URL("/")}, dead
}

func crawlConfig(t *testing.T, seeds []string) config.Config {
	var cfg config.Config
	if err := cfg.Parse(flag.NewFlagSet("test", flag.ContinueOnError), nil); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.Seeds = seeds
	cfg.Scope = config.ScopeAny
	cfg.AllowPrivate = true
	cfg.PolitenessDelay = 5 * time.Millisecond
	cfg.FetchTimeout = 30 * time.Second
	cfg.PartitionCount = 4
	cfg.MaxBodyBytes = 64 << 10
	cfg.Progress = false
	cfg.RobotsRetry = 50 * time.Millisecond
	cfg.Archive = t.TempDir()
	cfg.ArchiveMaxSize = 16 << 10 // several files, so warcio reads across rotations
	return cfg
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// warcioRecord is what testdata/readwarc.cjs prints per record.
type warcioRecord struct {
	File, Version, Type, ID, URI, Date string
	Headers                            map[string]string
	ContentLength, BlockLength         int
	BlockDigest, DeclaredBlockDigest   string
	DeclaredPayloadDigest, BlockText   string
	Status                             int
	Method                             string
	HTTPHeaders                        map[string]string `json:"httpHeaders"`
	PayloadDigest, Payload             string
}

// warcio finds node and the warcio package: TRAWLER_WARCIO_DIR, else the
// cache .ci/run installs it into. Without them the test skips, except in CI.
func warcio(t *testing.T) (node, dir string) {
	t.Helper()
	dir = os.Getenv("TRAWLER_WARCIO_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "trawler", "warcio")
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json"))
	}
	if err != nil {
		if os.Getenv("TRAWLER_CI") != "" {
			t.Fatalf("CI needs node and the npm package warcio in %s (.ci/run installs it): %v", dir, err)
		}
		t.Skipf("node or warcio missing (npm install --prefix %s warcio): %v", dir, err)
	}
	return node, dir
}

func readWithWarcio(t *testing.T, files []string) []warcioRecord {
	t.Helper()
	node, dir := warcio(t)
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", "readwarc.cjs")}, files...)...)
	cmd.Env = append(os.Environ(), "WARCIO_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcio: %v\n%s", err, stderr.String())
	}
	var recs []warcioRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r warcioRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("warcio output %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// served is what a server answers to a plain GET of u, without following
// redirects or decoding: the reference the archive is compared with.
func served(t *testing.T, u string) (int, []byte) {
	t.Helper()
	c := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestCrawlArchivedAndReadByWarcio crawls a local site with --archive and
// reads the WARC files back with webrecorder's warcio: every record is
// well-formed with the right length and digests, and every page the site
// served is there once, with the status and bytes the site serves.
func TestCrawlArchivedAndReadByWarcio(t *testing.T) {
	warcio(t) // skip before crawling when the reader is missing
	s, seeds, dead := site(t)
	cfg := crawlConfig(t, seeds)
	sum, err := app.RunAll(context.Background(), cfg, app.RunOptions{}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.Archive, "*"+warc.Suffix))
	if open, _ := filepath.Glob(filepath.Join(cfg.Archive, "*.open")); len(open) > 0 || len(files) == 0 {
		t.Fatalf("after the run: complete files %v, open files %v", files, open)
	}
	recs := readWithWarcio(t, files)

	byID := map[string]warcioRecord{}
	responses := map[string]warcioRecord{}
	var errorsOnly []string
	for _, r := range recs {
		if r.Version != "WARC/1.1" {
			t.Errorf("%s %s: version %q", r.Type, r.URI, r.Version)
		}
		if r.ContentLength != r.BlockLength {
			t.Errorf("%s %s: Content-Length %d, block has %d bytes", r.Type, r.URI, r.ContentLength, r.BlockLength)
		}
		if r.DeclaredBlockDigest != r.BlockDigest {
			t.Errorf("%s %s: WARC-Block-Digest %s, warcio's bytes hash to %s", r.Type, r.URI, r.DeclaredBlockDigest, r.BlockDigest)
		}
		if _, err := time.Parse(time.RFC3339Nano, r.Date); err != nil {
			t.Errorf("%s %s: WARC-Date %q: %v", r.Type, r.URI, r.Date, err)
		}
		if byID[r.ID].ID != "" {
			t.Errorf("record ID %s used twice", r.ID)
		}
		byID[r.ID] = r
		switch r.Type {
		case "response":
			if r.DeclaredPayloadDigest != r.PayloadDigest {
				t.Errorf("response %s: WARC-Payload-Digest %s, payload hashes to %s", r.URI, r.DeclaredPayloadDigest, r.PayloadDigest)
			}
			if responses[r.URI].ID != "" {
				t.Errorf("response %s archived twice", r.URI)
			}
			responses[r.URI] = r
		case "metadata":
			if r.Headers["warc-concurrent-to"] == "" {
				errorsOnly = append(errorsOnly, r.URI)
				if !strings.Contains(r.BlockText, "error: ") {
					t.Errorf("metadata of failed fetch %s has no error: %q", r.URI, r.BlockText)
				}
			}
		}
	}
	// Each file starts with its warcinfo; every other record names it.
	info := map[string]string{}
	for _, r := range recs {
		if r.Type == "warcinfo" {
			info[r.File] = r.ID
			if r.Headers["warc-filename"] != r.File {
				t.Errorf("warcinfo of %s names %q", r.File, r.Headers["warc-filename"])
			}
		} else if info[r.File] == "" || r.Headers["warc-warcinfo-id"] != info[r.File] {
			t.Errorf("%s %s in %s: WARC-Warcinfo-ID %q, file's warcinfo %q", r.Type, r.URI, r.File, r.Headers["warc-warcinfo-id"], info[r.File])
		}
	}
	// Request and metadata records belong to their response.
	var requests, metas int
	for _, r := range recs {
		if r.Type != "request" && (r.Type != "metadata" || r.Headers["warc-concurrent-to"] == "") {
			continue
		}
		resp := byID[r.Headers["warc-concurrent-to"]]
		if resp.Type != "response" || resp.URI != r.URI || resp.File != r.File {
			t.Errorf("%s %s is concurrent to %q, not its response", r.Type, r.URI, r.Headers["warc-concurrent-to"])
		}
		if r.Type == "request" {
			requests++
			if r.Method != "GET" || r.HTTPHeaders["user-agent"] != cfg.UserAgent {
				t.Errorf("request %s: method %q user agent %q", r.URI, r.Method, r.HTTPHeaders["user-agent"])
			}
		} else {
			metas++
		}
	}
	if requests != len(responses) || metas != len(responses) {
		t.Errorf("%d responses, %d requests, %d metadata records: want one each per response", len(responses), requests, metas)
	}

	// Every page the site served, and nothing else, is archived as served.
	var want []string
	for u := range s.Requests() {
		if !strings.HasSuffix(u, "/robots.txt") {
			want = append(want, u)
		}
	}
	var got []string
	for u := range responses {
		got = append(got, u)
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("archived responses differ from the pages served\n got %v\nwant %v", got, want)
	}
	if len(got) != int(sum.Fetched) {
		t.Errorf("%d responses archived, the crawl fetched %d", len(got), sum.Fetched)
	}
	if !slices.Equal(errorsOnly, []string{dead}) {
		t.Errorf("metadata-only records (failed fetches) %v, want %v", errorsOnly, []string{dead})
	}
	for _, u := range want {
		r := responses[u]
		status, body := served(t, u)
		payload, _ := base64.StdEncoding.DecodeString(r.Payload)
		if r.Status != status {
			t.Errorf("%s: archived status %d, served %d", u, r.Status, status)
		}
		switch {
		case strings.HasSuffix(u, "/doc.pdf"): // type not downloaded: head only
			if len(payload) != 0 || r.Headers["warc-truncated"] != "unspecified" {
				t.Errorf("%s: payload of %d bytes, WARC-Truncated %q", u, len(payload), r.Headers["warc-truncated"])
			}
		case strings.HasSuffix(u, "/big"): // cut at --max-body
			if len(payload) != int(cfg.MaxBodyBytes) || !bytes.HasPrefix(body, payload) || r.Headers["warc-truncated"] != "length" {
				t.Errorf("%s: payload of %d bytes (a prefix of what was served: %v), WARC-Truncated %q",
					u, len(payload), bytes.HasPrefix(body, payload), r.Headers["warc-truncated"])
			}
		default:
			if !bytes.Equal(payload, body) {
				t.Errorf("%s: archived payload differs from what was served\n got %q\nwant %q", u, payload, body)
			}
			if r.Headers["warc-truncated"] != "" {
				t.Errorf("%s: WARC-Truncated %q", u, r.Headers["warc-truncated"])
			}
		}
		if cl := r.HTTPHeaders["content-length"]; cl != "" && cl != itoa(len(payload)) {
			t.Errorf("%s: HTTP Content-Length %s, payload %d bytes", u, cl, len(payload))
		}
	}
	if loc := responses[seeds[0]+"moved"].HTTPHeaders["location"]; !strings.HasSuffix(loc, "/a3") {
		t.Errorf("redirect's Location %q", loc)
	}

	t.Logf("warcio read %d records in %d files: %d responses, %d failed fetches", len(recs), len(files), len(responses), len(errorsOnly))
	// The JSON Lines sink has one line per parsed page, matching the WARC.
	checkJSONL(t, cfg.Archive, responses, dead)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func checkJSONL(t *testing.T, dir string, responses map[string]warcioRecord, dead string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	lines := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: line %q: %v", f, l, err)
			}
			u, _ := m["url"].(string)
			if lines[u] != nil {
				t.Errorf("JSON Lines: %s twice", u)
			}
			lines[u] = m
		}
	}
	if len(lines) != len(responses)+1 {
		t.Errorf("JSON Lines has %d pages, want %d responses and the failed fetch", len(lines), len(responses))
	}
	for u, r := range responses {
		l := lines[u]
		if l == nil {
			t.Errorf("JSON Lines misses %s", u)
			continue
		}
		if int(l["status"].(float64)) != r.Status {
			t.Errorf("JSON Lines: %s status %v, WARC %d", u, l["status"], r.Status)
		}
		if _, ok := l["outlinks"].([]any); !ok {
			t.Errorf("JSON Lines: %s has no outlinks array: %v", u, l)
		}
	}
	if l := lines[dead]; l == nil || l["status"].(float64) != 0 || l["error"] == nil {
		t.Errorf("JSON Lines: failed fetch %s: %v", dead, l)
	}
	for u := range responses {
		if pu, _ := url.Parse(u); pu.Path == "/" { // testsite titles its pages "<host name><path>"
			if title, _ := lines[u]["title"].(string); !strings.HasSuffix(title, "/") {
				t.Errorf("JSON Lines: home page %s has title %q", u, title)
			}
		}
	}
}
