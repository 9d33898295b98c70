package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process whose CPU time and peak RSS are measured.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *os.File
	done chan error
}

// start runs bin with args, its stdout and stderr into dir/name.log.
func start(dir, name, bin string, args ...string) (*proc, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: f, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// wait waits for the process to exit by itself, up to timeout.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("%s: %w (see %s)", p.name, err, p.out.Name())
		}
		return nil
	case <-time.After(timeout):
		p.stop()
		return fmt.Errorf("%s: still running after %s (see %s)", p.name, timeout, p.out.Name())
	}
}

// waitBeside waits like wait, and fails at once when one of the services
// beside it exits first: a crawl whose dedup or frontier died would
// otherwise only time out, with nothing said of why. Either failure names
// every service that is gone and the last lines of its log.
// The lines where p (status --wait) says the crawl stopped moving, and
// what it waits for, are passed on to say as they come: a crawl that never
// ends shows why while the run waits, not only at its timeout.
func (p *proc) waitBeside(services []*proc, timeout time.Duration, say io.Writer) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(timeout)
	stalls := 0 // stall lines of p's log passed on so far
	for tick := 0; ; tick++ {
		select {
		case err := <-p.done:
			p.done <- err
			if err != nil {
				return fmt.Errorf("%s: %w (see %s)%s", p.name, err, p.out.Name(), gone(services))
			}
			return nil
		case <-deadline:
			p.stop()
			return fmt.Errorf("%s: still running after %s (see %s)%s%s", p.name, timeout, p.out.Name(), gone(services), alive(services))
		case <-ticker.C:
			if g := gone(services); g != "" {
				p.stop()
				return fmt.Errorf("%s: a service exited during the crawl%s", p.name, g)
			}
			if tick%10 == 0 {
				lines := stallLines(p.out.Name())
				for _, l := range lines[min(stalls, len(lines)):] {
					fmt.Fprintf(say, "e2e: %s: %s\n", p.name, l)
				}
				stalls = max(stalls, len(lines))
			}
		}
	}
}

// stallLines are the lines of the log at path that say a crawl stopped
// moving (crawlstate.Stall's, as status --wait prints them).
func stallLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "has not moved") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// gone describes the services that have exited, each with the end of its
// log; empty when all still run.
func gone(services []*proc) string {
	var b strings.Builder
	for _, s := range services {
		select {
		case err := <-s.done:
			s.done <- err
			fmt.Fprintf(&b, "; %s exited (%v), its log ends:\n%s", s.name, err, logTail(s.out.Name(), 5))
		default:
		}
	}
	return b.String()
}

// alive shows the end of each running service's log: what a crawl that
// never ends was doing.
func alive(services []*proc) string {
	var b strings.Builder
	for _, s := range services {
		select {
		case err := <-s.done:
			s.done <- err
		default:
			fmt.Fprintf(&b, "; %s still runs, its log ends:\n%s", s.name, logTail(s.out.Name(), 3))
		}
	}
	return b.String()
}

// logTail is the last n lines of a file, indented.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "\t(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "\t" + strings.Join(lines, "\n\t")
}

// waitOrStop waits for the process to exit by itself, stopping it after
// limit; it returns the process's own error, if any.
func (p *proc) waitOrStop(limit time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(limit):
		p.stop()
		return nil
	}
}

// stop asks the process to end (SIGTERM), and kills it after 10 s.
func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
	}
}

// usage is the CPU time and peak RSS of an exited process.
func (p *proc) usage() (cpu time.Duration, rss int64) {
	if p.cmd.ProcessState == nil {
		return 0, 0
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu, ru.Maxrss * 1024 // Linux reports KiB
}

// written is the bytes an exited process caused to be written to storage:
// Linux counts ru_oublock in 512-byte blocks from the same counter as
// /proc/PID/io's write_bytes, and adds it up over the process's threads
// when it exits (a sample of /proc/PID/io would miss the last writes).
func (p *proc) written() int64 {
	if p.cmd.ProcessState == nil {
		return 0
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Oublock * 512
	}
	return 0
}

// serverWritten sums write_bytes of /proc/PID/io over the processes named
// names (the machine's nats-server and redis-server): like serverCPU, a
// delta over a run is an upper bound, as others may use them.
func serverWritten(names ...string) int64 {
	var total int64
	eachProc(func(pid, comm string, _ []string) {
		if !slices.Contains(names, comm) {
			return
		}
		b, err := os.ReadFile("/proc/" + pid + "/io")
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "write_bytes:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				total += n
			}
		}
	})
	return total
}

// serverCPU sums the CPU time of every process whose command name is one of
// names (the machine's nats-server and redis-server), from /proc. They are
// shared with other jobs, so a delta over a run is an upper bound.
func serverCPU(names ...string) time.Duration {
	var ticks int64
	eachProc(func(_, comm string, f []string) {
		if slices.Contains(names, comm) && len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + st
		}
	})
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// eachProc calls visit for every process in /proc with its pid, its command
// name and the fields of its stat line after the name: state is f[0], the
// parent's pid f[1], user and system CPU ticks f[11] and f[12].
func eachProc(visit func(pid, comm string, f []string)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		visit(e.Name(), s[open+1:end], strings.Fields(s[end+1:]))
	}
}

// build compiles a Go main package into out.
func build(ctx context.Context, dir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// selfCPU is this process's CPU time so far: during a crawl, the synthetic
// web's servers (the harness does little else meanwhile).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampleRSS sums the resident memory of this process's children (the
// crawler's processes) every interval until stop is closed, and returns the
// series in MiB.
func sampleRSS(every time.Duration, stop <-chan struct{}) <-chan []float64 {
	out := make(chan []float64, 1)
	go func() {
		var series []float64
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- series
				return
			case <-t.C:
				series = append(series, float64(childrenRSS())/(1<<20))
			}
		}
	}()
	return out
}

// childrenRSS is the summed VmRSS, in bytes, of the processes whose parent
// is this one, from /proc.
func childrenRSS() int64 {
	self := strconv.Itoa(os.Getpid())
	var total int64
	eachProc(func(pid, _ string, f []string) {
		if len(f) < 2 || f[1] != self {
			return
		}
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb << 10
			}
		}
	})
	return total
}
