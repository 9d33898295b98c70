// Package charttest tests the Helm chart in ../trawler: helm lint and helm
// template over several values files, every rendered object decoded strictly
// into its Kubernetes API type, and the settings that matter asserted (security
// context, probes, network policy, autoscaling, the crawl configuration the
// services will read). It is its own module so that k8s.io/api stays out of
// the product's module graph.
package charttest
