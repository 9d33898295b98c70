package main

// Where the status figures come from: the services' heartbeats, the streams
// and consumers, the frontier's store (Redis or the crawl's bbolt file), and
// the fetchers' record of hosts whose robots.txt is unreachable.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/bus"
	"github.com/trawlerhq/trawler/pkg/crawlstate"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
	"github.com/trawlerhq/trawler/pkg/store"
	"github.com/trawlerhq/trawler/services/fetcher"
)

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

// reporter builds reports; it keeps the previous snapshot to tell "done".
type reporter struct {
	js         jetstream.JetStream
	prefix     string
	src        *frontierSource
	watcher    *crawlstate.Watcher
	partitions []int
	top        int
	prev       *crawlstate.Snapshot
	stall      crawlstate.Stall
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
	if line, ok := r.stall.See(s); ok {
		rep.Stalled = line
	}
	// A page parsed in process (run, fetcher --with-parser) skips the pages
	// stream but not the parsed one: it was fetched all the same. The live
	// fetchers' heartbeats (addBeats) may say more still.
	rep.Pages.Fetched, rep.Pages.Parsed = s.PagesTotal(), s.Parsed.LastSeq+s.Store.ParsedInProcess
	rep.Queued, rep.ParserBacklog, rep.DeadLetters = s.Queued(), s.ParserBacklog, s.DeadLetters
	f := &rep.Frontier
	f.Source, f.Queued, f.InFlight, f.Enqueued, f.Issued = r.src.name(), s.Store.Queued, s.Store.InFlight, s.Store.Enqueued, s.Store.Issued
	f.DroppedBudget, f.DroppedQueue = s.Store.DroppedBudget(), s.Store.DroppedQueue
	rep.Revisits.Scheduled, rep.Revisits.DueNow, rep.Revisits.DueHour = s.Store.Scheduled, s.Store.DueNow, s.Store.DueHour

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
	if rep.Stalled != "" {
		rep.Stalled += crawlstate.RobotsWait(retryingRobots(rep.Unreachable))
	}
	for _, stream := range []string{names.StreamDiscovered(), names.StreamFrontier(), names.StreamFetch(), names.StreamPages(), names.StreamParsed(), names.StreamDLQ()} {
		keeper := ""
		if slices.Contains(names.WorkStreams(), stream) {
			keeper = names.Keeper(stream)
		}
		sr, cons, err := streamDetails(ctx, r.js, stream, keeper, s.At)
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
	// Pages handed to the parser in process (run, fetcher --with-parser)
	// never enter the pages stream: the live fetchers' own count is then
	// the larger.
	rep.Pages.Fetched = max(rep.Pages.Fetched, uint64(sum["trawler_fetcher_pages_total"]+sum["trawler_fetcher_errors_total"]))
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
	rep.Revisits.PerSec = rate["trawler_fetcher_revisits_total"]
	rep.Revisits.Fetched, rep.Revisits.Unchanged = sum["trawler_fetcher_revisits_total"], sum["trawler_fetcher_revisits_unchanged_total"]
	rep.Revisits.NotModified = sum["trawler_fetcher_revisits_not_modified_total"]
	rep.NearDuplicates.Pages = sum["trawler_parser_pages_near_duplicate_total"]
	rep.NearDuplicates.Links = sum["trawler_parser_links_near_duplicate_total"]
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

// streamDetails reports a stream and its consumers; keeper is a work
// stream's block keeper subject (bus.KeepBlock), whose message is not
// counted, "" for other streams.
func streamDetails(ctx context.Context, js jetstream.JetStream, name, keeper string, now time.Time) (streamReport, []consumerReport, error) {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return streamReport{}, nil, fmt.Errorf("stream %s: %w", name, err)
	}
	var info *jetstream.StreamInfo
	msgs := uint64(0)
	if keeper != "" {
		info, msgs, err = bus.WorkMsgs(ctx, st, keeper)
	} else if info, err = st.Info(ctx); err == nil {
		msgs = info.State.Msgs
	}
	if err != nil {
		return streamReport{}, nil, fmt.Errorf("stream %s: %w", name, err)
	}
	sr := streamReport{Name: name, Msgs: msgs, Bytes: info.State.Bytes, LastSeq: info.State.LastSeq}
	if keeper == "" && msgs > 0 && !info.State.FirstTime.IsZero() {
		sr.OldestSec = now.Sub(info.State.FirstTime).Seconds()
	}
	var cons []consumerReport
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		cr := consumerReport{Stream: name, Name: ci.Name, Pending: ci.NumPending, AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered}
		if ci.NumPending+uint64(ci.NumAckPending) > 0 {
			// The oldest message not acknowledged is the first above the
			// ack floor that the stream still holds on the consumer's
			// subject (not another consumer's, nor a block keeper).
			seq := max(ci.AckFloor.Stream+1, info.State.FirstSeq)
			var opts []jetstream.GetMsgOpt
			if f := ci.Config.FilterSubject; f != "" {
				opts = append(opts, jetstream.WithGetMsgSubject(f))
			}
			if m, err := st.GetMsg(ctx, seq, opts...); err == nil {
				cr.OldestSec = now.Sub(m.Time).Seconds()
			}
		}
		cons = append(cons, cr)
		if keeper != "" {
			// A work stream's first message may be its keeper: its
			// oldest work is its consumers' oldest.
			sr.OldestSec = max(sr.OldestSec, cr.OldestSec)
		}
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
