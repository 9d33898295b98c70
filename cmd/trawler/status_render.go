package main

// Rendering the status report and the run's summary as lines of text.

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/pkg/heartbeat"
)

// retryingRobots counts the origins that are retried, not given up, how
// long until the last of them is given up if none answers, and the answer
// of the one tried last ("origin: error").
func retryingRobots(hosts []unreachableHost) (n int, settled time.Duration, last string) {
	latest := -1.0
	for _, h := range hosts {
		if !h.GaveUp {
			n++
			settled = max(settled, time.Duration(h.GiveUpIn*float64(time.Second)))
			// The one tried last has the most time left.
			if h.GiveUpIn > latest {
				latest, last = h.GiveUpIn, h.Origin+": "+h.Error
			}
		}
	}
	return n, settled, last
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

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
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
		robots := ""
		if n, _, _ := retryingRobots(rep.Unreachable); n > 0 {
			// What holds the queued URLs of a crawl near its end, as
			// run's progress line says it.
			robots = fmt.Sprintf(" | robots unreachable: %d retrying", n)
		}
		_, err := fmt.Fprintf(w, "%s fetched %d (%.1f/s) | parsed %d | queued %d | in flight %d | parser backlog %d | dead letters %d%s\n",
			rep.At.Format(time.TimeOnly), rep.Pages.Fetched, rep.Rates.PagesPerSec, rep.Pages.Parsed, rep.Queued,
			rep.Frontier.InFlight, rep.ParserBacklog, rep.DeadLetters, robots)
		return err
	}
	state := "running"
	switch {
	case rep.Done:
		state = "DONE: every queue is empty and nothing is in flight"
	case rep.Idle:
		state = "idle: nothing queued or in flight"
	case rep.Revisits.Scheduled > 0 && rep.Queued == 0 && rep.Frontier.InFlight == 0:
		state = "waiting for revisits: nothing queued or in flight, the next come due on their schedule"
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
	if rv := rep.Revisits; rv.Scheduled+rv.DueNow > 0 || rv.Fetched > 0 {
		fmt.Fprintf(&b, "revisits  %d scheduled, %d due now, %d due within the hour; %.1f/s, %.0f so far, %.0f unchanged (%.0f of them 304)\n",
			rv.Scheduled, rv.DueNow, rv.DueHour, rv.PerSec, rv.Fetched, rv.Unchanged, rv.NotModified)
	}
	if nd := rep.NearDuplicates; nd.Pages > 0 {
		fmt.Fprintf(&b, "near-dups %.0f pages near-duplicates of earlier ones, %.0f of their links not followed\n", nd.Pages, nd.Links)
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
	if n := c["trawler_parser_pages_near_duplicate_total"]; n > 0 {
		line := fmt.Sprintf("; %.0f near-duplicates", n)
		if l := c["trawler_parser_links_near_duplicate_total"]; l > 0 {
			line += fmt.Sprintf(" (%.0f of their links not followed)", l)
		}
		for i := range rows {
			if rows[i][0] == "parsed" {
				rows[i][1] += line
			}
		}
	}
	if ex := app.ExcludedLinks(c); ex != "" { // by reason: --max-url-length, the trap limits, --allow/--deny
		for i := range rows {
			if rows[i][0] == "parsed" {
				rows = append(rows[:i+1], append([][2]string{{"excluded", ex}}, rows[i+1:]...)...)
				break
			}
		}
	}
	if n := c["trawler_fetcher_truncated_total"]; n > 0 {
		rows = append(rows, [2]string{"cut", fmt.Sprintf("%.0f pages cut at --max-body: their text and links past the cut are left out (raise --max-body to keep them)", n)})
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
