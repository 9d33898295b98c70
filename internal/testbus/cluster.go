package testbus

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of embedded servers on loopback whose
// nodes can be stopped and started again on the same ports and storage, as
// a rolling restart or a lost node does.
type Cluster struct {
	t     testing.TB
	opts  []*server.Options
	Nodes []*server.Server // nil while a node is down
}

// StartCluster runs an n-node JetStream cluster; all is shut down with t.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	clientPorts, routePorts := make([]int, n), make([]int, n)
	var routes []*url.URL
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", routePorts[i])})
	}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: clientPorts[i],
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "trawler-test", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  routes,
		})
	}
	c.Nodes = make([]*server.Server, n)
	for i := range n {
		c.Start(i)
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			c.Stop(i)
		}
	})
	return c
}

// StartLone runs one JetStream server that is not part of a cluster and can
// be stopped and started again on the same port and storage, as a lone
// server's restart does: what it keeps only in memory is gone after it.
func StartLone(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Nodes: make([]*server.Server, 1)}
	c.opts = []*server.Options{{
		ServerName: "lone", Host: "127.0.0.1", Port: freePort(t),
		JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	}}
	c.Start(0)
	t.Cleanup(func() { c.Stop(0) })
	return c
}

// URL is the comma-separated client URL of every node, as --nats takes it.
func (c *Cluster) URL() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// Start starts node i (again) and waits until it takes clients.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		c.t.Fatalf("cluster node %d not ready", i)
	}
	c.Nodes[i] = s
}

// Stop shuts node i down and waits until it is gone.
func (c *Cluster) Stop(i int) {
	if s := c.Nodes[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.Nodes[i] = nil
	}
}

// Index returns the index of the node named name (a stream's leader), or -1.
func (c *Cluster) Index(name string) int {
	for i, o := range c.opts {
		if o.ServerName == name {
			return i
		}
	}
	return -1
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
