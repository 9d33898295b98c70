package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v2"
)

var (
	envErr  = regexp.MustCompile(`error setting flag "([^"]+)" from environment variable "([^"]+)": (.*)$`)
	fileErr = regexp.MustCompile(`error setting flag "([^"]+)" from config file: (.*)$`)
)

// parseError rewrites ff's errors as one line that names where the bad value
// came from (the flag, the TRAWLER_* variable, or the file and its line) and
// what is wrong with it.
func parseError(err error, fs *flag.FlagSet) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	file := ""
	if f := fs.Lookup("config"); f != nil {
		file = f.Value.String()
	}
	switch {
	case envErr.MatchString(msg):
		m := envErr.FindStringSubmatch(msg)
		return fmt.Errorf("%s=%q: not a valid value for --%s (%s)", m[2], os.Getenv(m[2]), m[1], m[3])
	case fileErr.MatchString(msg):
		m := fileErr.FindStringSubmatch(msg)
		return fmt.Errorf("--config %s: %s: %s", file, lineOf(file, m[1]), m[2])
	case strings.HasPrefix(msg, "error parsing YAML config: "):
		return fmt.Errorf("--config %s: %s", file, strings.TrimPrefix(strings.TrimPrefix(msg, "error parsing YAML config: "), "yaml: "))
	case strings.Contains(msg, "error parsing commandline arguments: "):
		return flagError(msg[strings.Index(msg, "error parsing commandline arguments: ")+len("error parsing commandline arguments: "):], fs)
	}
	return err
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	badFlagValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
)

// flagError makes the flag package's message about a command-line flag
// say what to do: the nearest flag for one that does not exist (--seeds:
// did you mean --seed?), and what a value should look like for one the
// package could only call a "parse error".
func flagError(msg string, fs *flag.FlagSet) error {
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		if s := closest(fs, m[1]); s != "" {
			return fmt.Errorf("unknown flag --%s (did you mean --%s?)", m[1], s)
		}
		return fmt.Errorf("unknown flag --%s", m[1])
	}
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		value, name, why := m[1], m[2], m[3]
		if f := fs.Lookup(name); f != nil && why == "parse error" {
			why = "not " + valueKind(f)
		}
		return fmt.Errorf("--%s %q: %s", name, value, why)
	}
	return errors.New(msg)
}

// valueKind says what a flag's value should look like, from its type.
func valueKind(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value"
	}
	switch g.Get().(type) {
	case bool:
		return "true or false"
	case time.Duration:
		return "a duration such as 500ms, 30s or 2m"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number"
	}
	return "a valid value"
}

// checkConfigKeys refuses keys of the --config file that name no setting:
// a misspelt key (politeness-dealy) would otherwise be ignored without a
// word and its setting left at the default, which for a crawler can mean
// hammering a site. Keys starting with "x-" are left for other tools that
// share the file. (Unknown TRAWLER_* variables stay allowed: the
// environment is shared with other programs, and the tests' own use it.)
func checkConfigKeys(fs *flag.FlagSet) error {
	f := fs.Lookup("config")
	if f == nil || f.Value.String() == "" {
		return nil
	}
	file := f.Value.String()
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--config %s: %w", file, err)
	}
	var keys yaml.MapSlice
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return fmt.Errorf("--config %s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var bad []string
	for _, kv := range keys {
		k := fmt.Sprint(kv.Key)
		if fs.Lookup(k) != nil || strings.HasPrefix(k, "x-") {
			continue // x-: kept for other tools sharing the file, as compose files do
		}
		hint := ""
		if s := closest(fs, k); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		bad = append(bad, fmt.Sprintf("%s: unknown setting %q%s", lineOf(file, k), k, hint))
	}
	if len(bad) > 0 {
		return fmt.Errorf("--config %s: %s; the keys are flag names (trawler help settings)", file, strings.Join(bad, "; "))
	}
	return nil
}

// lineOf finds the line of key in the YAML file, for messages.
func lineOf(file, key string) string {
	data, _ := os.ReadFile(file)
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, key+":") || strings.HasPrefix(t, `"`+key+`":`) {
			return fmt.Sprintf("line %d", i+1)
		}
	}
	return "key " + key
}

// closest is the setting whose name is nearest to k (at most 2 edits).
func closest(fs *flag.FlagSet, k string) string {
	best, bestD := "", 3
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	for _, n := range names {
		if d := editDistance(k, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
