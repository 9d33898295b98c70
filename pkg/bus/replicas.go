package bus

import "github.com/nats-io/nats.go/jetstream"

// replicated is a JetStream context that carries how many replicas the
// crawl's streams and key-value buckets get on a NATS cluster.
type replicated struct {
	jetstream.JetStream
	replicas int
}

// WithReplicas returns js marked so that Topology.Ensure and KeyValue
// create streams and buckets with n replicas (1: no replication, the only
// choice on a single server; 3 survives the loss of one node).
func WithReplicas(js jetstream.JetStream, n int) jetstream.JetStream {
	if n <= 1 {
		return js
	}
	return replicated{JetStream: js, replicas: n}
}

// Replicas is the replica count js was marked with (1 when unmarked).
func Replicas(js jetstream.JetStream) int {
	if r, ok := js.(replicated); ok {
		return r.replicas
	}
	return 1
}
