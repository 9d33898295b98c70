package main

// The headline table: the figure each component's issue set a goal for, in
// the words a reader of docs/benchmarks.md looks for. The full table of
// every benchmark follows it in the report.

// A measure names one benchmark's value in one unit.
type measure struct{ Bench, Unit string }

// A headline is one row: a measure, or the ratio of two measured in the same
// run (Over set), shown in the unit Show (default: the measure's, or × for a
// ratio), with the goal the issue asked for, if any. AtLeast (or AtMost,
// for a cost), when set, checks the median against the goal; it stays unset
// where the goal was set for a size the default run does not measure.
type headline struct {
	Component, What string
	Of, Over        measure
	Show            string
	Goal            string
	AtLeast, AtMost float64
}

var headlines = []headline{
	{Component: "dedup", What: "URL checks/s through the service (JetStream in and out, cache, Bloom filter, Redis seen set)",
		Of: measure{"DedupService", "urls/s"}, Show: "URLs/s", Goal: "≥ 100,000", AtLeast: 100_000},
	{Component: "dedup", What: "… vs one Redis SADD per URL, same run",
		Of: measure{"DedupService", "speedup"}, Show: "×", Goal: "≥ 20 ×", AtLeast: 20},
	{Component: "dedup", What: "in-process cache hits, share of lookups",
		Of: measure{"DedupService", "cache-hit%"}, Show: "%"},
	{Component: "dedup", What: "seen set in Redis, bytes per URL (1 M fingerprints, 32 partitions)",
		Of: measure{"SeenSetBytesPerURL", "bytes/URL"}, Goal: "≤ 12 (at 10 M)"},
	{Component: "frontier", What: "fetch tasks issued/s, one replica, Redis, 2,000 due hosts",
		Of: measure{"Dispatch/redis/hosts=2000", "tasks/s"}, Goal: "≥ 10,000", AtLeast: 10_000},
	{Component: "frontier", What: "… 20,000 due hosts",
		Of: measure{"Dispatch/redis/hosts=20000", "tasks/s"}, Goal: "≥ 10,000", AtLeast: 10_000},
	{Component: "frontier", What: "… embedded bbolt, 2,000 due hosts",
		Of: measure{"Dispatch/bolt/hosts=2000", "tasks/s"}},
	{Component: "frontier", What: "peak RSS with 1 M URLs queued over 10,000 hosts",
		Of: measure{"FrontierMemory", "peak-RSS-MB"}, Show: "MB", Goal: "< 200 (at 10 M / 100 k)"},
	{Component: "parser", What: "link extraction, MB/s of HTML",
		Of: measure{"Extract/contexts", "MB/s"}},
	{Component: "parser", What: "… pages per CPU-second vs x/net/html's DOM parse alone",
		Of: measure{"Extract/contexts", "pages/cpu-s"}, Over: measure{"DOMParseBaseline", "pages/cpu-s"}, Goal: "≥ 2 ×", AtLeast: 2},
	{Component: "parser", What: "extraction and topical scoring of every link, MB/s",
		Of: measure{"ExtractAndScore", "MB/s"}},
	{Component: "parser", What: "harvest rate, best-first vs breadth-first (topical web)",
		Of: measure{"HarvestRate", "harvest-best-first"}, Over: measure{"HarvestRate", "harvest-breadth-first"}},
	{Component: "resolver", What: "lookups/s, Zipf stream of 200 k names, DNS server answering in 2 ms",
		Of: measure{"Stream/delay=2ms", "ours-lookups/s"}, Show: "lookups/s"},
	{Component: "resolver", What: "… vs Go's resolver, same run",
		Of: measure{"Stream/delay=2ms", "x-go"}, Show: "×", Goal: "≥ 5 × (at 1 M names)"},
	{Component: "robots.txt", What: "Allowed, ns per check (12.5 KB robots.txt)",
		Of: measure{"Allowed/named-group", "ns/op"}, Show: "ns"},
	{Component: "store", What: "seen set in Redis, fingerprints looked up per second (batches of 1,000)",
		Of: measure{"Seen/redis", "fps/s"}, Show: "lookups/s"},
	{Component: "store", What: "seen set in Redis, fingerprints inserted per second (batches of 1,000)",
		Of: measure{"Record/redis", "fps/s"}, Show: "inserts/s"},
	{Component: "cache", What: "CLOCK, ns per lookup-or-insert (50,000 entries)",
		Of: measure{"LookupInsert/clock/50000", "ns/link"}, Show: "ns"},
	{Component: "cache", What: "CLOCK hit rate at 50,000 entries vs the clairvoyant MIN",
		Of: measure{"HitRate/clock/50000", "hit%"}, Over: measure{"HitRate/min/50000", "hit%"}},
	{Component: "urls", What: "canonicalization, ns per URL (one URL that needs every rule)",
		Of: measure{"Canonicalize", "ns/op"}, Show: "ns", Goal: "≤ 500", AtMost: 500},
	{Component: "urls", What: "… ns per URL, the discovery web's href spellings",
		Of: measure{"CanonicalizeMix", "ns/URL"}, Show: "ns", Goal: "≤ 500", AtMost: 500},
}
