package warc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/testutil"
)

func response(i int) *Record {
	body := strings.Repeat(fmt.Sprintf("page %d ", i), 50+i%7)
	return &Record{
		Type: TypeResponse, TargetURI: fmt.Sprintf("http://example.org/%d", i), ContentType: ContentTypeHTTPResponse,
		Head: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"), Payload: []byte(body),
	}
}

// readDir reads every completed file of dir, failing on damage, and returns
// the target URIs of the non-warcinfo records in file order.
func readDir(t *testing.T, dir string) (uris []string, files int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+Suffix))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(recs) == 0 || recs[0].Get("WARC-Type") != TypeWarcinfo {
			t.Fatalf("%s does not start with a warcinfo record", p)
		}
		if got := recs[0].Get("WARC-Filename"); got != filepath.Base(p) {
			t.Errorf("%s: WARC-Filename %q", p, got)
		}
		for _, r := range recs[1:] {
			if r.Get("WARC-Warcinfo-ID") != recs[0].Get("WARC-Record-ID") {
				t.Errorf("%s: record %s names warcinfo %s, file's is %s", p, r.Get("WARC-Target-URI"), r.Get("WARC-Warcinfo-ID"), recs[0].Get("WARC-Record-ID"))
			}
			uris = append(uris, r.Get("WARC-Target-URI"))
		}
		files++
	}
	return uris, files
}

func TestWriterRotatesBySize(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(Options{Dir: dir, MaxSize: 2000, Info: []Field{{"software", "test"}}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 40 {
		r := response(i)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r.TargetURI)
	}
	if open, _ := filepath.Glob(filepath.Join(dir, "*"+OpenSuffix)); len(open) != 1 {
		t.Errorf("%d files open while writing, want 1", len(open))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, files := readDir(t, dir)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("records read back differ:\n got %v\nwant %v", got, want)
	}
	if files < 5 || files != len(w.Completed()) {
		t.Errorf("%d files (writer completed %d), want several of about 2000 bytes", files, len(w.Completed()))
	}
	for _, p := range w.Completed() {
		fi, _ := os.Stat(p)
		if fi.Size() > 2000+1500 { // a file is completed at the first write past MaxSize
			t.Errorf("%s has %d bytes", p, fi.Size())
		}
	}
	if open, _ := filepath.Glob(filepath.Join(dir, "*"+OpenSuffix)); len(open) != 0 {
		t.Errorf("open files left after Close: %v", open)
	}
}

func TestWriterRotatesByAge(t *testing.T) {
	dir := t.TempDir()
	var clock testutil.Clock
	w, err := NewWriter(Options{Dir: dir, MaxAge: 500 * time.Millisecond, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(response(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.RotateIfDue(); err != nil || len(w.Completed()) != 0 {
		t.Fatalf("rotated a young file (err %v)", err)
	}
	clock.Advance(499 * time.Millisecond)
	if err := w.RotateIfDue(); err != nil || len(w.Completed()) != 0 {
		t.Fatalf("rotated a file 1ms before MaxAge (err %v)", err)
	}
	clock.Advance(time.Millisecond)
	if err := w.RotateIfDue(); err != nil || len(w.Completed()) != 1 {
		t.Fatalf("an old file was not completed by RotateIfDue: %v, %v", w.Completed(), err)
	}
	if err := w.RotateIfDue(); err != nil || len(w.Completed()) != 1 {
		t.Fatalf("an idle writer opened a file: %v", w.Completed())
	}
	if err := w.Write(response(2)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(500 * time.Millisecond)
	if err := w.Write(response(3)); err != nil { // completes the old file first
		t.Fatal(err)
	}
	w.Close()
	got, files := readDir(t, dir)
	if files != 3 || len(got) != 3 {
		t.Errorf("%d files with %v, want 3 files of one record each", files, got)
	}
}

func TestWriterKeepsGroupsTogether(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewWriter(Options{Dir: dir, MaxSize: 100}) // every group overflows
	for i := range 3 {
		if err := w.Write(response(i), response(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for _, p := range w.Completed() {
		f, _ := os.Open(p)
		recs, err := ReadAll(f)
		f.Close()
		if err != nil || len(recs) != 3 {
			t.Errorf("%s: %d records (%v), want warcinfo and one group of two", p, len(recs), err)
		}
	}
}

// A file cut anywhere (a crash mid-write) recovers to its complete records.
func TestRecoverCutFiles(t *testing.T) {
	src := t.TempDir()
	w, _ := NewWriter(Options{Dir: src})
	for i := range 3 {
		w.Write(response(i))
	}
	w.Close()
	data, err := os.ReadFile(w.Completed()[0])
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(w.Completed()[0])
	recs, _ := ReadAll(f)
	f.Close()
	for cut := 0; cut <= len(data); cut += max(1, len(data)/97) {
		dir := t.TempDir()
		name := filepath.Join(dir, filepath.Base(w.Completed()[0]))
		os.WriteFile(name+OpenSuffix, data[:cut], 0o644)
		done, err := Recover(dir)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		complete := 0 // records (after warcinfo) wholly inside the cut
		for _, r := range recs[1:] {
			if r.End <= int64(cut) {
				complete++
			}
		}
		got, _ := readDir(t, dir)
		if len(got) != complete {
			t.Errorf("cut at %d: recovered %d records, want %d", cut, len(got), complete)
		}
		if complete == 0 && len(done) != 0 {
			t.Errorf("cut at %d: a file without records was published", cut)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*"+OpenSuffix)); len(left) != 0 {
			t.Errorf("cut at %d: left %v", cut, left)
		}
	}
}

func TestRecoverLeavesLiveWritersAlone(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewWriter(Options{Dir: dir})
	w.Write(response(1))
	w.Sync()
	if done, err := Recover(dir); err != nil || len(done) != 0 {
		t.Fatalf("Recover took a live writer's file: %v %v", done, err)
	}
	if err := w.Write(response(2)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, _ := readDir(t, dir); len(got) != 2 {
		t.Errorf("read %v, want 2 records", got)
	}
}

// TestKillDuringWriting kills (SIGKILL) a process that writes and syncs
// records as fast as it can, then checks that only complete, valid files are
// visible, and that Recover turns the .open file into one holding every
// record the process had reported synced.
func TestKillDuringWriting(t *testing.T) {
	if os.Getenv("WARC_KILL_HELPER") != "" {
		killHelper()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringWriting$")
	cmd.Env = append(os.Environ(), "WARC_KILL_HELPER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	synced := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "synced ")); err == nil {
			synced = n
		}
		if synced >= 300 { // several rotations done, a file in the middle of writing
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if synced < 300 {
		t.Fatalf("helper stopped after %d records", synced)
	}
	visible, files := readDir(t, dir) // fails on any damaged visible file
	open, _ := filepath.Glob(filepath.Join(dir, "*"+OpenSuffix))
	t.Logf("after kill: %d complete files with %d records, %d open files", files, len(visible), len(open))
	if files == 0 || len(open) != 1 {
		t.Fatalf("%d complete and %d open files, want some and exactly one", files, len(open))
	}
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	all, _ := readDir(t, dir)
	seen := map[string]bool{}
	for _, u := range all {
		seen[u] = true
	}
	for i := range synced {
		if u := response(i).TargetURI; !seen[u] {
			t.Errorf("record %s was synced before the kill but is not in any file", u)
		}
	}
}

func killHelper() {
	w, err := NewWriter(Options{Dir: os.Getenv("WARC_KILL_HELPER"), MaxSize: 20000})
	if err != nil {
		os.Exit(1)
	}
	for i := 0; ; i++ {
		if w.Write(response(i)) != nil || w.Sync() != nil {
			os.Exit(1)
		}
		fmt.Printf("synced %d\n", i+1)
	}
}
