package parser_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/internal/testsite"
	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/topic"
)

// topicalWeb is a small web with topical structure for measuring focused
// crawls: every page is about one of a few topics (its title, and half of
// its words, come from that topic's vocabulary), and most of its links go
// to pages of the same topic, with the target's title as anchor text, as
// on the real Web (Davison 2000: linked pages tend to share a topic). Each
// host's root is a hub with links to pages of every topic; the roots are
// the seeds.
type topicalWeb struct {
	site    *testsite.Site
	seeds   []string
	topicOf map[string]int // URL -> topic
	pages   int
}

var topicWords = [][]string{
	strings.Fields("sailing yacht boat harbour regatta sail mast keel hull anchor crew marina tide wind dinghy skipper rigging starboard port voyage"),
	strings.Fields("cooking recipe kitchen oven pasta sauce garlic onion butter flour bake roast spice chef dinner soup salad dessert bread grill"),
	strings.Fields("astronomy telescope galaxy planet star nebula orbit comet asteroid moon eclipse observatory cosmic supernova constellation meteor solar lunar quasar"),
	strings.Fields("football match goal striker league referee stadium season coach defender penalty midfield tournament cup fans kickoff team player transfer"),
}

var genericWords = strings.Fields(`people time year day way thing world life hand part place case week company
	system program question work government number night point home water room mother area money story fact
	month lot right study book eye job word business issue side kind head house service friend father power hour
	game line end member law car city community name president team minute idea kid body information back parent
	face others level office door health person art war history party result change morning reason research girl`)

// newTopicalWeb builds hosts x perHost pages (plus a hub per host); locality
// is the share of a page's links that stay within its topic.
func newTopicalWeb(t testing.TB, hosts, perHost int, locality float64, seed uint64) *topicalWeb {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := &topicalWeb{site: testsite.New(), topicOf: map[string]int{}}
	var hs []*testsite.Host
	for i := 0; i < hosts; i++ {
		hs = append(hs, w.site.AddHost(t, fmt.Sprintf("t%d", i), fmt.Sprintf("127.0.%d.%d", 60+i/200, 10+i%200)))
	}
	type page struct {
		url, title string
		topic      int
	}
	var all []page
	byTopic := make([][]int, len(topicWords))
	for _, h := range hs {
		for j := 0; j < perHost; j++ {
			tp := rng.IntN(len(topicWords))
			title := fmt.Sprintf("%s %s %s", pick(rng, topicWords[tp]), pick(rng, topicWords[tp]), pick(rng, genericWords))
			p := page{url: h.URL(fmt.Sprintf("/p%d", j)), title: title, topic: tp}
			w.topicOf[p.url] = tp
			byTopic[tp] = append(byTopic[tp], len(all))
			all = append(all, p)
		}
	}
	w.pages = len(all)
	link := func(b *strings.Builder, p page) {
		fmt.Fprintf(b, ` <a href="%s">%s</a> `, p.url, p.title)
	}
	words := func(b *strings.Builder, tp, n int) {
		for i := 0; i < n; i++ {
			if tp >= 0 && rng.IntN(2) == 0 {
				b.WriteString(pick(rng, topicWords[tp]))
			} else {
				b.WriteString(pick(rng, genericWords))
			}
			b.WriteByte(' ')
		}
	}
	for _, p := range all {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1>\n", p.title, p.title)
		for para := 0; para < 4; para++ {
			b.WriteString("<p>")
			words(&b, p.topic, 30)
			for k := 0; k < 2; k++ {
				target := all[rng.IntN(len(all))]
				if rng.Float64() < locality {
					same := byTopic[p.topic]
					target = all[same[rng.IntN(len(same))]]
				}
				link(&b, target)
				words(&b, p.topic, 5)
			}
			b.WriteString("</p>\n")
		}
		b.WriteString("</body></html>\n")
		host, path := splitURL(p.url)
		hostOf(hs, host).Set(path, testsite.Page{Body: b.String()})
	}
	for _, h := range hs {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>Welcome to %s</title></head><body><h1>Welcome</h1><ul>\n", h.Name)
		for k := 0; k < 12; k++ {
			b.WriteString("<li>")
			link(&b, all[rng.IntN(len(all))])
			b.WriteString("</li>\n")
		}
		b.WriteString("</ul></body></html>\n")
		h.Set("/", testsite.Page{Body: b.String()})
		w.seeds = append(w.seeds, h.URL("/"))
	}
	return w
}

// share is the fraction of the web's pages (hubs excluded) about topic tp.
func (w *topicalWeb) share(tp int) float64 {
	n := 0
	for _, t := range w.topicOf {
		if t == tp {
			n++
		}
	}
	return float64(n) / float64(len(w.topicOf))
}

func pick(rng *rand.Rand, words []string) string { return words[rng.IntN(len(words))] }

func splitURL(u string) (base, path string) {
	i := strings.Index(u[len("http://"):], "/") + len("http://")
	return u[:i], u[i:]
}

func hostOf(hs []*testsite.Host, base string) *testsite.Host {
	for _, h := range hs {
		if h.Base == base {
			return h
		}
	}
	panic("no host " + base)
}

// harvest is what one focused crawl measured.
type harvest struct {
	fetched, relevant, judgedRelevant int
}

func (h harvest) rate() float64 { return float64(h.relevant) / float64(max(h.fetched, 1)) }

// crawl runs a whole crawl of w with RunAll and counts, among the pages
// fetched (seeds excluded), those about topic 0 (relevant) and those the
// parser judged relevant (A above the threshold).
func crawl(t testing.TB, w *topicalWeb, scoring string, maxPages int) harvest {
	var cfg config.Config
	if err := cfg.Parse(flag.NewFlagSet("harvest", flag.ContinueOnError), nil); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir, cfg.Seeds, cfg.AllowPrivate, cfg.Progress = t.TempDir(), w.seeds, true, false
	cfg.PolitenessDelay, cfg.PolitenessFactor, cfg.IgnoreRobots = 2*time.Millisecond, 0, true
	cfg.FetchTimeout, cfg.PartitionCount, cfg.MaxPages = 30*time.Second, 4, maxPages
	cfg.Topic, cfg.Scoring = strings.Join(topicWords[0][:6], " "), scoring
	cfg.Out = filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := app.RunAll(ctx, cfg, app.RunOptions{}, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("RunAll: %v", err)
	}
	f, err := os.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seeds := map[string]bool{}
	for _, s := range w.seeds {
		seeds[s] = true
	}
	var h harvest
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var doc messages.Parsed
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("--out line: %v", err)
		}
		if seeds[doc.URL] {
			continue
		}
		h.fetched++
		if tp, ok := w.topicOf[doc.URL]; ok && tp == 0 {
			h.relevant++
		}
		if doc.Relevant {
			h.judgedRelevant++
		}
	}
	return h
}

// TestHarvestRate crawls a topical web three times with the same budget:
// the topical strategies must fetch a larger share of on-topic pages than
// breadth-first, and clearly more than the topic's share of the web (about
// 1 in 4, which is what breadth-first gets on average; the order in which
// hosts answer moves it by a few pages from run to run).
func TestHarvestRate(t *testing.T) {
	if testing.Short() {
		t.Skip("three crawls")
	}
	w := newTopicalWeb(t, 4, 40, 0.8, 1)
	budget := w.pages / 3
	rates := map[string]harvest{}
	for _, s := range topic.Strategies {
		h := crawl(t, w, s, budget+len(w.seeds))
		rates[s] = h
		t.Logf("%-13s fetched %3d, on topic %3d (harvest %.2f), judged relevant %3d", s, h.fetched, h.relevant, h.rate(), h.judgedRelevant)
		if h.fetched < budget/2 {
			t.Errorf("%s: fetched only %d of a budget of %d", s, h.fetched, budget)
		}
	}
	share := w.share(0)
	bfs := rates[topic.BreadthFirst].rate()
	t.Logf("share of the web on topic: %.2f", share)
	for _, s := range []string{topic.BestFirst, topic.SharkSearch} {
		if r := rates[s].rate(); r <= bfs || r < 1.4*share {
			t.Errorf("%s harvest %.2f: want more than breadth-first's %.2f and at least 1.4 x the topic's share %.2f", s, r, bfs, share)
		}
	}
}

// BenchmarkHarvestRate is TestHarvestRate on a larger web, reporting each
// strategy's harvest rate (run by task bench).
func BenchmarkHarvestRate(b *testing.B) {
	w := newTopicalWeb(b, 8, 100, 0.8, 2)
	budget := w.pages / 4
	for b.Loop() {
		for _, s := range topic.Strategies {
			h := crawl(b, w, s, budget+len(w.seeds))
			b.ReportMetric(h.rate(), "harvest-"+s)
		}
	}
	b.ReportMetric(w.share(0), "topic-share")
	b.ReportMetric(0, "ns/op")
}
