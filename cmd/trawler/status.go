package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/pkg/config"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/services/fetcher"
)

// statusCmd shows whether a crawl is healthy and when it will end: once, as
// a screen refreshed every --every (--watch), as status lines until the
// crawl is over (--wait), or as JSON (--json; one object per line with
// --watch or --wait).
// errStatusInterrupted ends status --wait on Ctrl-C (the crawl goes on).
var errStatusInterrupted = errors.New("interrupted: status stopped waiting; the crawl goes on")

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var wait, watch, asJSON bool
	var every time.Duration
	var top int
	cfg, _, err := parse("status", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&wait, "wait", false, "print status until the crawl is finished, then exit 0")
		fs.DurationVar(&every, "every", 2*time.Second, "interval between updates with --wait or --watch")
		fs.BoolVar(&watch, "watch", false, "redraw the status screen every --every until interrupted")
		fs.BoolVar(&asJSON, "json", false, "print the status as JSON (one object per line with --watch or --wait)")
		fs.IntVar(&top, "top", 5, "show this many hosts with the longest queues (reads every partition of a Redis store; 0: off)")
	})
	if err != nil {
		return err
	}
	a, err := attach(cfg, "trawler-status")
	if err != nil {
		return err
	}
	defer a.nc.Close()
	src, err := openFrontierSource(ctx, cfg, a)
	if err != nil {
		return err
	}
	defer src.close()
	all, _ := (&config.Config{PartitionCount: cfg.PartitionCount}).OwnedPartitions()
	r := &reporter{
		js: a.js, prefix: cfg.Prefix, src: src, top: top, partitions: all,
		watcher: &crawlstate.Watcher{JS: a.js, Names: a.names, Store: src, Partitions: all, MaxPages: cfg.MaxPages},
	}
	tty := false
	if f, ok := stdout.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}

	if !wait && !watch {
		rep, err := r.once(ctx)
		if err != nil {
			return err
		}
		return show(stdout, rep, asJSON, false)
	}
	t := time.NewTicker(min(every, 250*time.Millisecond))
	defer t.Stop()
	var lastShown, downSince time.Time
	for {
		if done, err := stillConnected(a.nc, &downSince); done {
			return err // the crawl's NATS is gone (a trawler run that ended)
		}
		rep, err := r.next(ctx)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "trawler status:", err)
		}
		if err == nil && (rep.At.Sub(lastShown) >= every || rep.Done && wait) {
			lastShown = rep.At
			switch {
			case watch && !asJSON && tty:
				fmt.Fprint(stdout, "\033[H\033[2J")
				show(stdout, rep, false, false)
			case watch || asJSON:
				show(stdout, rep, asJSON, false)
				if !asJSON {
					fmt.Fprintln(stdout)
				}
			default:
				show(stdout, rep, false, true)
			}
		}
		if err == nil && rep.Done && wait {
			if !asJSON {
				fmt.Fprintln(stdout, "finished: every queue is empty and nothing is in flight")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if wait {
				return errStatusInterrupted
			}
			return nil
		case <-t.C:
		}
	}
}

// statusReport is the status of a crawl; its JSON is documented in
// docs/operations.md.
type statusReport struct {
	At     time.Time `json:"at"`
	Prefix string    `json:"prefix"`
	// Done: every queue empty, nothing in flight, and nothing moved between
	// two snapshots (crawlstate.Finished). Idle: the first two only.
	Done bool `json:"done"`
	Idle bool `json:"idle"`

	Pages struct {
		Fetched uint64 `json:"fetched"` // pages published over the crawl's life (failures included)
		Parsed  uint64 `json:"parsed"`
	} `json:"pages"`
	Rates struct {
		PagesPerSec  float64 `json:"pages_per_s"`
		BytesPerSec  float64 `json:"bytes_per_s"`
		ParsedPerSec float64 `json:"parsed_per_s"`
	} `json:"rates"`
	Queued        uint64 `json:"queued"`         // URLs waiting anywhere before a fetch
	ParserBacklog uint64 `json:"parser_backlog"` // pages the parser has not acknowledged
	DeadLetters   uint64 `json:"dead_letters"`
	Frontier      struct {
		Source       string  `json:"source"` // redis or heartbeat (the run process's store)
		Queued       int64   `json:"queued"`
		InFlight     int64   `json:"in_flight"`
		Enqueued     uint64  `json:"enqueued"` // URLs ever queued: the size of the seen set
		Issued       uint64  `json:"issued"`
		ReadyHosts   float64 `json:"ready_hosts"`
		WaitingHosts float64 `json:"waiting_hosts"`
		// DroppedBudget and DroppedQueue are the URLs the store dropped
		// over the crawl's life: over a host's --max-pages-per-host, and
		// pushed out of a queue full at --max-queue-per-host.
		DroppedBudget uint64          `json:"dropped_host_budget"`
		DroppedQueue  uint64          `json:"dropped_host_queue"`
		TopHosts      []hostQueue     `json:"top_hosts,omitempty"`
		Partitions    map[string]bool `json:"-"`
	} `json:"frontier"`
	// Unreachable are the origins whose robots.txt is unreachable: being
	// retried (with the time left before they are given up) or given up.
	Unreachable []unreachableHost  `json:"robots_unreachable"`
	Statuses    map[string]float64 `json:"statuses"` // responses by class (2xx, 3xx, ...), live replicas' lifetimes
	Failures    map[string]float64 `json:"failures"` // fetches without a response, by kind
	// Excluded are the links the parsers did not follow for a limit, by
	// reason (trawler_parser_links_excluded_total{reason}).
	Excluded map[string]float64 `json:"excluded"`
	// GivenUp is what live processes gave up without a response, over
	// their lifetimes: hosts (robots.txt unreachable, name not resolving),
	// URLs handed back over --max-deferrals, URLs lost over --max-attempts.
	GivenUp  givenUpReport    `json:"given_up"`
	Dedup    dedupReport      `json:"dedup"`
	Replicas map[string]int   `json:"replicas"` // live processes running each service
	Beats    []beatReport     `json:"processes"`
	Streams  []streamReport   `json:"streams"`
	Cons     []consumerReport `json:"consumers"`
}

// unreachableHost is an origin of the robots bucket's "u." records.
type unreachableHost struct {
	Origin   string  `json:"origin"`
	Error    string  `json:"error"`
	Failures int     `json:"failures"` // unreachable answers in a row
	Of       int     `json:"of"`       // answers in a row that give it up
	GaveUp   bool    `json:"gave_up"`
	GiveUpIn float64 `json:"give_up_in_s"` // seconds left, if every try fails; 0 when given up or due
}

// robotsUnreachable reads the robots bucket's "u." records (only origins
// whose robots.txt is or was unreachable, not every origin): retried ones
// first, soonest given up first, then the given-up ones.
func robotsUnreachable(ctx context.Context, js jetstream.JetStream, bucket string, now time.Time) []unreachableHost {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil // no robots.txt fetched yet, or --ignore-robots
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w, err := kv.Watch(ctx, fetcher.UnreachablePrefix+">", jetstream.IgnoreDeletes())
	if err != nil {
		return nil
	}
	defer w.Stop()
	var out []unreachableHost
	for e := range w.Updates() {
		if e == nil {
			break // the current values are all in
		}
		var r fetcher.UnreachableRecord
		if json.Unmarshal(e.Value(), &r) != nil {
			continue
		}
		u := unreachableHost{Origin: r.Origin, Error: r.Error, Failures: r.Failures, Of: r.Of, GaveUp: r.GaveUp}
		if !r.GaveUp {
			u.GiveUpIn = max(r.GiveUpAt.Sub(now).Seconds(), 0)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.GaveUp != b.GaveUp {
			return !a.GaveUp
		}
		if a.GiveUpIn != b.GiveUpIn {
			return a.GiveUpIn < b.GiveUpIn
		}
		return a.Origin < b.Origin
	})
	return out
}

// unreachableLine is the screen's summary of rep.Unreachable: the retried
// origins with the time they have left, then the given-up ones, at most
// five of each named.
func unreachableLine(hosts []unreachableHost) string {
	var retrying, gaveUp []string
	nr, ng := 0, 0
	for _, h := range hosts {
		if h.GaveUp {
			if ng++; ng <= 5 {
				gaveUp = append(gaveUp, fmt.Sprintf("%s (%s)", h.Origin, h.Error))
			}
			continue
		}
		if nr++; nr <= 5 {
			left := "at its next try"
			if h.GiveUpIn > 0 {
				left = "in " + age(h.GiveUpIn)
			}
			retrying = append(retrying, fmt.Sprintf("%s (%s; %d of %d tries; given up %s)", h.Origin, h.Error, h.Failures, h.Of, left))
		}
	}
	line := fmt.Sprintf("%d retrying", nr)
	if nr > 0 {
		line += ": " + strings.Join(retrying, ", ")
		if nr > 5 {
			line += fmt.Sprintf(", … %d more", nr-5)
		}
	}
	line += fmt.Sprintf("; %d given up, their URLs failed", ng)
	if ng > 0 {
		line += ": " + strings.Join(gaveUp, ", ")
		if ng > 5 {
			line += fmt.Sprintf(", … %d more", ng-5)
		}
	}
	return line
}

type hostQueue struct {
	Host   string `json:"host"`
	Queued int    `json:"queued"`
}

// dedupReport has the dedup layers' hit rates (counters of live replicas).
type dedupReport struct {
	In           float64 `json:"urls_in"`
	New          float64 `json:"urls_new"`
	CacheHitRate float64 `json:"cache_hit_rate"` // of URLs in: found in the in-process cache
	BloomNewRate float64 `json:"bloom_new_rate"` // of cache misses: proved new by the Bloom filter
	SeenHitRate  float64 `json:"seen_hit_rate"`  // of seen-set lookups: already there
	SeenLookups  float64 `json:"seen_lookups"`
}

type beatReport struct {
	Service  string   `json:"service"`
	Services []string `json:"services"`
	Replica  string   `json:"replica"`
	AgeSec   float64  `json:"age_s"`
	Alive    bool     `json:"alive"`
}

type streamReport struct {
	Name      string  `json:"name"`
	Msgs      uint64  `json:"msgs"`
	Bytes     uint64  `json:"bytes"`
	LastSeq   uint64  `json:"last_seq"`
	OldestSec float64 `json:"oldest_age_s"` // age of the oldest message held; 0 when empty
}

type consumerReport struct {
	Stream      string  `json:"stream"`
	Name        string  `json:"name"`
	Pending     uint64  `json:"pending"`     // not yet delivered
	AckPending  int     `json:"ack_pending"` // delivered, not acknowledged
	Redelivered int     `json:"redelivered"`
	OldestSec   float64 `json:"oldest_age_s"` // age of the oldest message not acknowledged; 0 when none
}

// reporter builds reports; it keeps the previous snapshot to tell "done".
type reporter struct {
	js         jetstream.JetStream
	prefix     string
	src        *frontierSource
	watcher    *crawlstate.Watcher
	partitions []int
	top        int
	prev       *crawlstate.Snapshot
}

// once takes two snapshots (the second after the store's figures changed
// source, i.e. a newer heartbeat, when they come from heartbeats) so that
// Done means something.
func (r *reporter) once(ctx context.Context) (statusReport, error) {
	if _, err := r.next(ctx); err != nil {
		return statusReport{}, err
	}
	first := r.src.beatAt
	deadline := time.Now().Add(3 * heartbeatEvery)
	for {
		select {
		case <-ctx.Done():
			return statusReport{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		rep, err := r.next(ctx)
		if err != nil || r.src.redis != nil || !r.src.beatAt.Equal(first) || time.Now().After(deadline) {
			return rep, err
		}
	}
}

// heartbeatEvery is how often `run` beats (services use heartbeat.DefaultEvery).
const heartbeatEvery = time.Second

func (r *reporter) next(ctx context.Context) (statusReport, error) {
	var rep statusReport
	s, err := r.watcher.Snapshot(ctx)
	if err != nil {
		return rep, err
	}
	rep.At, rep.Prefix = s.At.UTC(), r.prefix
	rep.Idle = s.Idle()
	if r.prev != nil {
		rep.Done = crawlstate.Finished(*r.prev, s) && (r.src.redis != nil || !r.src.beatAt.Equal(r.src.prevBeatAt))
	}
	r.prev = &s
	r.src.prevBeatAt = r.src.beatAt
	rep.Pages.Fetched, rep.Pages.Parsed = s.Pages.LastSeq, s.Parsed.LastSeq
	rep.Queued, rep.ParserBacklog, rep.DeadLetters = s.Queued(), s.ParserBacklog, s.DeadLetters
	f := &rep.Frontier
	f.Source, f.Queued, f.InFlight, f.Enqueued, f.Issued = r.src.name(), s.Store.Queued, s.Store.InFlight, s.Store.Enqueued, s.Store.Issued
	f.DroppedBudget, f.DroppedQueue = s.Store.DroppedBudget(), s.Store.DroppedQueue

	beats := r.src.beats
	if r.src.redis != nil { // the heartbeat source read them already otherwise
		beats, _ = heartbeat.List(ctx, r.js, r.watcher.Names)
	}
	addBeats(&rep, beats, s.At)
	if r.top > 0 && r.src.redis != nil {
		f.TopHosts = topHosts(ctx, r.src.redis, r.partitions, r.top)
	}
	names := r.watcher.Names
	rep.Unreachable = robotsUnreachable(ctx, r.js, names.RobotsBucket(), s.At)
	for _, stream := range []string{names.StreamDiscovered(), names.StreamFrontier(), names.StreamFetch(), names.StreamPages(), names.StreamParsed(), names.StreamDLQ()} {
		sr, cons, err := streamDetails(ctx, r.js, stream, s.At)
		if err != nil {
			return rep, err
		}
		rep.Streams = append(rep.Streams, sr)
		rep.Cons = append(rep.Cons, cons...)
	}
	return rep, nil
}

// addBeats sums the counters of live processes into the report.
func addBeats(rep *statusReport, beats []heartbeat.Beat, now time.Time) {
	rep.Replicas, rep.Statuses, rep.Failures, rep.Excluded = map[string]int{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	sum := map[string]float64{}
	rate := map[string]float64{}
	for _, b := range beats {
		alive := b.Alive(now)
		rep.Beats = append(rep.Beats, beatReport{Service: b.Service, Services: b.Services, Replica: b.Replica,
			AgeSec: now.Sub(b.At).Seconds(), Alive: alive})
		if !alive {
			continue
		}
		for _, s := range b.Services {
			rep.Replicas[s]++
		}
		for k, v := range b.Counters {
			sum[k] += v
		}
		for k, v := range b.Rates {
			rate[k] += v
		}
	}
	rep.Rates.PagesPerSec = rate["trawler_fetcher_pages_total"] + rate["trawler_fetcher_errors_total"]
	rep.Rates.BytesPerSec = rate["trawler_fetcher_body_bytes_total"]
	rep.Rates.ParsedPerSec = rate["trawler_parser_pages_total"]
	rep.Frontier.ReadyHosts = sum["trawler_frontier_ready_hosts"]
	rep.Frontier.WaitingHosts = sum["trawler_frontier_waiting_hosts"]
	for k, v := range sum {
		if l, ok := label(k, "trawler_fetcher_responses_total", "class"); ok {
			rep.Statuses[l] += v
		}
		if l, ok := label(k, "trawler_fetcher_failures_total", "kind"); ok {
			rep.Failures[l] += v
		}
		if l, ok := label(k, "trawler_parser_links_excluded_total", "reason"); ok && v > 0 {
			rep.Excluded[l] += v
		}
	}
	rep.GivenUp = givenUpReport{Hosts: sum["trawler_fetcher_robots_given_up_hosts_total"],
		Deferred: sum["trawler_frontier_urls_deferred_out_total"], Lost: sum["trawler_frontier_urls_dropped_total"]}
	d := &rep.Dedup
	d.In, d.New = sum["trawler_dedup_urls_in_total"], sum["trawler_dedup_urls_new_total"]
	hits, absent := sum["trawler_dedup_cache_hits_total"], sum["trawler_dedup_bloom_absent_total"]
	d.SeenLookups = sum["trawler_dedup_seen_lookups_total"]
	d.CacheHitRate = ratio(hits, d.In-sum["trawler_dedup_urls_invalid_total"])
	d.BloomNewRate = ratio(absent, d.In-sum["trawler_dedup_urls_invalid_total"]-hits)
	d.SeenHitRate = ratio(sum["trawler_dedup_seen_hits_total"], d.SeenLookups)
}

// excludedLine is the screen's line of the links excluded by reason, in
// the words of the run summary ("160 links: 120 url length, 40 path
// depth"); "" when none.
func excludedLine(ex map[string]float64) string {
	c := make(map[string]float64, len(ex))
	for reason, n := range ex {
		c[`trawler_parser_links_excluded_total{reason="`+reason+`"}`] = n
	}
	return app.ExcludedLinks(c)
}

// label returns the value of one label of a flattened series of metric.
func label(key, metric, name string) (string, bool) {
	rest, ok := strings.CutPrefix(key, metric+"{")
	if !ok {
		return "", false
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func streamDetails(ctx context.Context, js jetstream.JetStream, name string, now time.Time) (streamReport, []consumerReport, error) {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return streamReport{}, nil, fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return streamReport{}, nil, fmt.Errorf("stream %s: %w", name, err)
	}
	sr := streamReport{Name: name, Msgs: info.State.Msgs, Bytes: info.State.Bytes, LastSeq: info.State.LastSeq}
	if info.State.Msgs > 0 && !info.State.FirstTime.IsZero() {
		sr.OldestSec = now.Sub(info.State.FirstTime).Seconds()
	}
	var cons []consumerReport
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		cr := consumerReport{Stream: name, Name: ci.Name, Pending: ci.NumPending, AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered}
		if ci.NumPending+uint64(ci.NumAckPending) > 0 {
			// The oldest message not acknowledged is the first above the
			// ack floor that the stream still holds.
			seq := max(ci.AckFloor.Stream+1, info.State.FirstSeq)
			if m, err := st.GetMsg(ctx, seq); err == nil {
				cr.OldestSec = now.Sub(m.Time).Seconds()
			}
		}
		cons = append(cons, cr)
	}
	if err := lister.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return sr, cons, fmt.Errorf("consumers of %s: %w", name, err)
	}
	sort.Slice(cons, func(i, j int) bool { return cons[i].Name < cons[j].Name })
	return sr, cons, nil
}

// topHosts reads every partition's host queues: a full read of the store,
// fine for an occasional status, not for a tight loop over a huge crawl.
func topHosts(ctx context.Context, st store.Store, parts []int, n int) []hostQueue {
	var all []hostQueue
	for _, p := range parts {
		ps, err := st.Load(ctx, p)
		if err != nil {
			return nil
		}
		for _, h := range ps.Hosts {
			if h.Queued > 0 {
				all = append(all, hostQueue{Host: h.Host, Queued: h.Queued})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Queued != all[j].Queued {
			return all[i].Queued > all[j].Queued
		}
		return all[i].Host < all[j].Host
	})
	return all[:min(n, len(all))]
}

// show prints rep as JSON, as one status line (line), or as a screen.
func show(w io.Writer, rep statusReport, asJSON, line bool) error {
	if asJSON {
		data, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	if line {
		_, err := fmt.Fprintf(w, "%s fetched %d (%.1f/s) | parsed %d | queued %d | in flight %d | parser backlog %d | dead letters %d\n",
			rep.At.Format(time.TimeOnly), rep.Pages.Fetched, rep.Rates.PagesPerSec, rep.Pages.Parsed, rep.Queued,
			rep.Frontier.InFlight, rep.ParserBacklog, rep.DeadLetters)
		return err
	}
	state := "running"
	switch {
	case rep.Done:
		state = "DONE: every queue is empty and nothing is in flight"
	case rep.Idle:
		state = "idle: nothing queued or in flight"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "crawl %s at %s: %s\n", rep.Prefix, rep.At.Format(time.DateTime), state)
	fmt.Fprintf(&b, "pages     fetched %d (%.1f/s, %s/s), parsed %d (%.1f/s), parser backlog %d\n",
		rep.Pages.Fetched, rep.Rates.PagesPerSec, app.HumanBytes(rep.Rates.BytesPerSec), rep.Pages.Parsed, rep.Rates.ParsedPerSec, rep.ParserBacklog)
	f := rep.Frontier
	fmt.Fprintf(&b, "frontier  %d URLs queued (%d in host queues), %d in flight, hosts %.0f ready / %.0f waiting; seen set %d URLs [store: %s]\n",
		rep.Queued, f.Queued, f.InFlight, f.ReadyHosts, f.WaitingHosts, f.Enqueued, f.Source)
	if d := droppedLine(f.DroppedBudget, f.DroppedQueue); d != "" {
		fmt.Fprintf(&b, "dropped   %s\n", d)
	}
	if len(f.TopHosts) > 0 {
		var parts []string
		for _, h := range f.TopHosts {
			parts = append(parts, fmt.Sprintf("%s %d", h.Host, h.Queued))
		}
		fmt.Fprintf(&b, "top hosts %s\n", strings.Join(parts, ", "))
	}
	if len(rep.Unreachable) > 0 {
		fmt.Fprintf(&b, "robots    %s\n", unreachableLine(rep.Unreachable))
	}
	fmt.Fprintf(&b, "responses %s; failures %s; dead letters %d\n", mix(rep.Statuses), mix(rep.Failures), rep.DeadLetters)
	if ex := excludedLine(rep.Excluded); ex != "" {
		fmt.Fprintf(&b, "excluded  %s\n", ex)
	}
	if g := rep.GivenUp; g.Hosts+g.Deferred+g.Lost > 0 {
		fmt.Fprintf(&b, "given up  %s\n", givenUpLine(g))
	}
	d := rep.Dedup
	fmt.Fprintf(&b, "dedup     %.0f URLs in, %.0f new; cache hits %.1f%%, Bloom proved new %.1f%% of misses, seen set hits %.1f%% of %.0f lookups\n",
		d.In, d.New, 100*d.CacheHitRate, 100*d.BloomNewRate, 100*d.SeenHitRate, d.SeenLookups)
	fmt.Fprintf(&b, "replicas  %s\n", replicas(rep))
	fmt.Fprintf(&b, "\n%-22s %10s %12s %12s %10s\n", "STREAM", "MSGS", "BYTES", "LAST SEQ", "OLDEST")
	for _, s := range rep.Streams {
		fmt.Fprintf(&b, "%-22s %10d %12s %12d %10s\n", s.Name, s.Msgs, app.HumanBytes(float64(s.Bytes)), s.LastSeq, age(s.OldestSec))
	}
	fmt.Fprintf(&b, "\n%-34s %10s %11s %11s %10s\n", "CONSUMER", "PENDING", "ACK PENDING", "REDELIVERED", "OLDEST")
	for _, c := range groupPartitions(rep.Cons) {
		fmt.Fprintf(&b, "%-34s %10d %11d %11d %10s\n", c.Stream+"/"+c.Name, c.Pending, c.AckPending, c.Redelivered, age(c.OldestSec))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func replicas(rep statusReport) string {
	if len(rep.Beats) == 0 {
		return "no heartbeats (processes older than heartbeats, or none running)"
	}
	var parts []string
	for _, s := range []string{"dedup", "frontier", "fetcher", "parser", "archive"} {
		parts = append(parts, fmt.Sprintf("%s %d", s, rep.Replicas[s]))
	}
	dead := 0
	for _, b := range rep.Beats {
		if !b.Alive {
			dead++
		}
	}
	if dead > 0 {
		parts = append(parts, fmt.Sprintf("(%d silent)", dead))
	}
	return strings.Join(parts, ", ")
}

func mix(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func age(sec float64) string {
	if sec <= 0 {
		return "-"
	}
	return time.Duration(sec * float64(time.Second)).Truncate(time.Second).String()
}

// frontierSource gives crawlstate the frontier store's totals: from Redis
// when --redis is set (or no process reports them), else from the heartbeat
// of the `run` process that holds the embedded store (status cannot open
// a bbolt file another process has locked).
type frontierSource struct {
	store.Frontier // only Stats is called (by crawlstate)
	redis          store.Store
	a              attached

	beats              []heartbeat.Beat
	beatAt, prevBeatAt time.Time
}

func openFrontierSource(ctx context.Context, cfg config.Config, a attached) (*frontierSource, error) {
	f := &frontierSource{a: a}
	if len(cfg.RedisAddrs) == 0 {
		beats, err := heartbeat.List(ctx, a.js, a.names)
		if err != nil {
			return nil, err
		}
		for _, b := range beats {
			if b.Store != nil && b.Alive(time.Now()) {
				return f, nil
			}
		}
	}
	addrs := cfg.RedisAddrs
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:6379"}
	}
	st, err := store.OpenRedis(ctx, addrs, cfg.RedisCluster, a.names.Prefix, app.RedisOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("%w (no running `trawler run` reports its store either)", err)
	}
	f.redis = st
	return f, nil
}

func (f *frontierSource) Stats(ctx context.Context, parts []int) (store.Stats, error) {
	if f.redis != nil {
		return f.redis.Stats(ctx, parts)
	}
	beats, err := heartbeat.List(ctx, f.a.js, f.a.names)
	if err != nil {
		return store.Stats{}, err
	}
	f.beats = beats
	for _, b := range beats { // newest first
		if b.Store != nil && b.Alive(time.Now()) {
			f.beatAt = b.At
			return *b.Store, nil
		}
	}
	return store.Stats{}, errors.New("no live heartbeat reports the store: has the crawl stopped?")
}

func (f *frontierSource) name() string {
	if f.redis != nil {
		return "redis"
	}
	return "heartbeat"
}

func (f *frontierSource) close() {
	if f.redis != nil {
		f.redis.Close()
	}
}

// groupPartitions folds the per-partition consumers (dedup-0, dedup-1, …)
// into one line each for the screen: sums, and the oldest age. JSON keeps
// them all.
func groupPartitions(cons []consumerReport) []consumerReport {
	var out []consumerReport
	group := map[string]int{} // stream/prefix -> index in out
	count := map[string]int{}
	for _, c := range cons {
		prefix, num, ok := strings.Cut(c.Name, "-")
		if _, err := strconv.Atoi(num); !ok || err != nil || (prefix != "dedup" && prefix != "frontier") {
			out = append(out, c)
			continue
		}
		key := c.Stream + "/" + prefix
		i, seen := group[key]
		if !seen {
			i = len(out)
			group[key] = i
			out = append(out, consumerReport{Stream: c.Stream})
		}
		g := &out[i]
		count[key]++
		g.Name = fmt.Sprintf("%s-* (%d)", prefix, count[key])
		g.Pending += c.Pending
		g.AckPending += c.AckPending
		g.Redelivered += c.Redelivered
		g.OldestSec = max(g.OldestSec, c.OldestSec)
	}
	return out
}

// givenUpReport counts what was given up without a response.
type givenUpReport struct {
	Hosts    float64 `json:"hosts"`
	Deferred float64 `json:"urls_deferred_out"`
	Lost     float64 `json:"urls_lost"`
}

// givenUp is the summary's line of what the crawl gave up without a
// response: hosts whose robots.txt stayed unreachable (or whose name does not
// resolve), URLs handed back unfetched too often, URLs whose fetch result
// never came back; "" when none.
func givenUp(c map[string]float64) string {
	g := givenUpReport{Hosts: c["trawler_fetcher_robots_given_up_hosts_total"],
		Deferred: c["trawler_frontier_urls_deferred_out_total"], Lost: c["trawler_frontier_urls_dropped_total"]}
	if g.Hosts+g.Deferred+g.Lost == 0 {
		return ""
	}
	return givenUpLine(g)
}

// givenUpLine says what g counts, in the words of the run summary.
func givenUpLine(g givenUpReport) string {
	var parts []string
	if g.Hosts > 0 {
		parts = append(parts, fmt.Sprintf("%s (robots.txt unreachable or name not resolving: their URLs failed, kind robots)", counted(g.Hosts, "host", "hosts")))
	}
	if g.Deferred > 0 {
		parts = append(parts, fmt.Sprintf("%s handed back unfetched over --max-deferrals (kind deferred)", counted(g.Deferred, "URL", "URLs")))
	}
	if g.Lost > 0 {
		parts = append(parts, fmt.Sprintf("%s whose result never came back (--max-attempts, kind lost)", counted(g.Lost, "URL", "URLs")))
	}
	return strings.Join(parts, ", ")
}

// counted is n with its noun, singular for 1.
func counted(n float64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%.0f %s", n, many)
}

// droppedLine says what the per-host limits dropped, by reason; "" when
// nothing was.
func droppedLine(budget, queue uint64) string {
	if budget+queue == 0 {
		return ""
	}
	return fmt.Sprintf("%d URLs by the per-host limits: %d over --max-pages-per-host, %d pushed out of a queue full at --max-queue-per-host",
		budget+queue, budget, queue)
}

// printSummary ends `trawler run` with a table of what the run did, from the
// same counters `status` reads in heartbeats.
func printSummary(w io.Writer, sum app.Summary, archiveDir string) {
	var rep statusReport
	addBeats(&rep, []heartbeat.Beat{{Services: app.Services, At: time.Now(), Counters: sum.Counters}}, time.Now())
	c := sum.Counters
	rate := float64(sum.Fetched+sum.Errors) / max(sum.Elapsed.Seconds(), 1e-3)
	rows := [][2]string{
		{"fetched", fmt.Sprintf("%d pages and %d failures in %s (%.1f/s), %s of bodies", sum.Fetched, sum.Errors,
			sum.Elapsed.Truncate(time.Millisecond), rate, app.HumanBytes(c["trawler_fetcher_body_bytes_total"]))},
		{"responses", mix(rep.Statuses)},
		{"failures", mix(rep.Failures)},
		{"parsed", fmt.Sprintf("%.0f pages, %.0f links, %.0f handed to dedup", c["trawler_parser_pages_total"],
			c["trawler_parser_links_total"], c["trawler_parser_links_queued_total"])},
		{"dedup", fmt.Sprintf("%.0f URLs in, %.0f new; cache hits %.1f%%, Bloom proved new %.1f%% of misses, seen set hits %.1f%%",
			rep.Dedup.In, rep.Dedup.New, 100*rep.Dedup.CacheHitRate, 100*rep.Dedup.BloomNewRate, 100*rep.Dedup.SeenHitRate)},
		{"crawl", fmt.Sprintf("%d pages over its life, %d URLs left queued, %d dead letters", sum.Total, sum.Queued, sum.DeadLetters)},
	}
	if ex := app.ExcludedLinks(c); ex != "" { // by reason: --max-url-length, the trap limits, --allow/--deny
		for i := range rows {
			if rows[i][0] == "parsed" {
				rows = append(rows[:i+1], append([][2]string{{"excluded", ex}}, rows[i+1:]...)...)
				break
			}
		}
	}
	if d := droppedLine(sum.DroppedBudget, sum.DroppedQueue); d != "" { // over the crawl's life, as the crawl row
		rows = append(rows, [2]string{"dropped", d})
	}
	if given := givenUp(c); given != "" {
		rows = append(rows, [2]string{"given up", given})
	}
	if commits, ok := c["trawler_store_commits_total"]; ok {
		pages := max(float64(sum.Fetched+sum.Errors), 1)
		line := fmt.Sprintf("%.0f store commits (%.3f per page, %.1f writes each)", commits, commits/pages,
			c["trawler_store_writes_total"]/max(commits, 1))
		if ck, ok := c["trawler_out_checkpoints_total"]; ok {
			line += fmt.Sprintf(", %.0f --out checkpoints (%.3f per page)", ck, ck/pages)
		}
		rows = append(rows, [2]string{"durability", line})
	}
	if archiveDir != "" {
		rows = append(rows, [2]string{"archive", fmt.Sprintf("%.0f WARC records, %.0f JSON lines in %s",
			c["trawler_archive_warc_records_total"], c["trawler_archive_jsonl_records_total"], archiveDir)})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-10s %s\n", r[0], r[1])
	}
}
