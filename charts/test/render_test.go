package charttest

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/subjects"
)

var services = []string{"dedup", "frontier", "fetcher", "parser"}

func isStateful(svc string) bool { return svc == "dedup" || svc == "frontier" }

// Every case renders, decodes strictly, and holds the invariants below.
func TestRender(t *testing.T) {
	helm := helmPath(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, helm, c)
			if len(r.Deployments) != len(services) {
				t.Fatalf("%d Deployments, want one per service %v", len(r.Deployments), services)
			}
			for _, svc := range services {
				d := r.Deployments[svc]
				if d == nil {
					t.Fatalf("no Deployment for %s", svc)
				}
				checkDeployment(t, svc, d)
				// Without automatic ownership every replica owns every
				// partition: the old pod must stop before the new one starts.
				automatic := !slices.Contains(c.set, "partitionOwnership.automatic=false")
				if isStateful(svc) && !automatic && d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
					t.Errorf("%s: strategy %s, want Recreate", svc, d.Spec.Strategy.Type)
				}
				// Static ownership pins every partition to the one replica;
				// automatic ownership must leave --partitions unset.
				static := slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--partitions=") })
				if isStateful(svc) && static == automatic {
					t.Errorf("%s: --partitions given = %v with automatic ownership = %v", svc, static, automatic)
				}
				checkConfig(t, svc, d, r)
				if slices.Contains(c.set, "services.fetcher.extraArgs={--with-parser}") && svc == "fetcher" &&
					!slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--with-parser") {
					t.Errorf("fetcher args %v: no --with-parser", d.Spec.Template.Spec.Containers[0].Args)
				}
			}
			checkAutoscaling(t, r)
			checkSelectors(t, r)
			checkNetworkPolicies(t, c, r)
			checkMonitoring(t, c, r)
			checkKEDA(t, c, r)
		})
	}
}

// checkDeployment: one image, the service as subcommand, hardened pod and
// container, probes on the metrics port.
func checkDeployment(t *testing.T, svc string, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if got := labels.Set(d.Spec.Template.Labels); !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(got) {
		t.Errorf("%s: selector %v does not match pod labels %v", svc, d.Spec.Selector.MatchLabels, got)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod must run as a non-root user: %+v", svc, psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod seccomp profile must be RuntimeDefault", svc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token must not be mounted", svc)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Errorf("%s: host namespaces in use", svc)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%s: want exactly one container", svc)
	}
	c := pod.Containers[0]
	if len(c.Args) < 1 || c.Args[0] != svc || len(c.Command) != 0 {
		t.Errorf("%s: args %v command %v: want the image's entrypoint with subcommand %s", svc, c.Args, c.Command, svc)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("%s: no container securityContext", svc)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: root filesystem must be read-only", svc)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: privilege escalation must be off", svc)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("%s: privileged", svc)
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0:
		t.Errorf("%s: capabilities must drop ALL and add none: %+v", svc, sc.Capabilities)
	}
	var metricsPort int32
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			metricsPort = p.ContainerPort
		}
	}
	if metricsPort == 0 {
		t.Fatalf("%s: no container port named metrics", svc)
	}
	if env(c, "TRAWLER_METRICS_ADDR") != fmt.Sprintf(":%d", metricsPort) {
		t.Errorf("%s: TRAWLER_METRICS_ADDR %q does not serve the metrics port %d", svc, env(c, "TRAWLER_METRICS_ADDR"), metricsPort)
	}
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", svc, p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s: %s probe %s on port %s, want %s on metrics", svc, p.kind, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("%s: CPU and memory requests must be set: %v", svc, c.Resources.Requests)
	}
	// Writable paths are volumes; the config file is read-only.
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(m.MountPath, "/etc/trawler") && !m.ReadOnly {
			t.Errorf("%s: %s mounted writable", svc, m.MountPath)
		}
	}
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
			t.Errorf("%s: a rolling update must not take replicas away before new ones are ready", svc)
		}
	}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkConfig parses what a container will see — the ConfigMap file, its
// TRAWLER_* environment with Kubernetes $(VAR) expansion and Secret values, and
// its args — exactly as the binary does, and validates it. Keys and variables
// no flag knows are errors: the binary would silently ignore them.
func checkConfig(t *testing.T, svc string, d *appsv1.Deployment, r *Rendered) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	known := map[string]bool{}
	fs := flag.NewFlagSet("known", flag.ContinueOnError)
	(&config.Config{}).Register(fs)
	fs.VisitAll(func(f *flag.Flag) { known[f.Name] = true })
	known["config"] = true

	// The ConfigMap volume and its file.
	var cmName string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "config" && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cm := r.ConfigMaps[cmName]
	if cm == nil {
		t.Fatalf("%s: config volume refers to ConfigMap %q, not rendered", svc, cmName)
	}
	file := cm.Data["trawler.yaml"]
	var keys map[string]any
	if err := yaml.UnmarshalStrict([]byte(file), &keys); err != nil {
		t.Fatalf("%s: trawler.yaml: %v", svc, err)
	}
	for k := range keys {
		if !known[k] {
			t.Errorf("%s: trawler.yaml key %q is not a setting (docs/configuration.md)", svc, k)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "trawler.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == "config" && m.MountPath == "/etc/trawler/trawler.yaml" && m.SubPath == "trawler.yaml" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("%s: the ConfigMap is not mounted at /etc/trawler/trawler.yaml", svc)
	}

	// The environment, resolved as the kubelet does, replacing whatever
	// TRAWLER_* variables the test process (or the previous service) had.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TRAWLER_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = expand(t, svc, e.Value, vars)
		case e.ValueFrom.SecretKeyRef != nil:
			vars[e.Name] = secretValue(t, svc, r, e.ValueFrom.SecretKeyRef)
		case e.ValueFrom.ResourceFieldRef != nil:
			if e.ValueFrom.ResourceFieldRef.ContainerName != c.Name {
				t.Errorf("%s: %s refers to container %q", svc, e.Name, e.ValueFrom.ResourceFieldRef.ContainerName)
			}
			continue
		default:
			t.Errorf("%s: env %s has an unexpected source", svc, e.Name)
		}
		if name, ok := strings.CutPrefix(e.Name, "TRAWLER_"); ok {
			flagName := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
			if !known[flagName] {
				t.Errorf("%s: %s is not a setting", svc, e.Name)
			}
			t.Setenv(e.Name, vars[e.Name])
		}
	}
	args := slices.Clone(c.Args[1:])
	for i := range args {
		if args[i] == "/etc/trawler/trawler.yaml" {
			args[i] = path
		}
	}
	var cfg config.Config
	fs = flag.NewFlagSet(svc, flag.ContinueOnError)
	if err := cfg.Parse(fs, args); err != nil {
		t.Fatalf("%s: args %v: %v", svc, args, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("%s: the rendered settings do not validate: %v", svc, err)
	}
	if cfg.MetricsAddr == "" {
		t.Errorf("%s: metrics (and probes) are off", svc)
	}
	// NATS URLs parse and carry no credentials (the URL is logged): those
	// reach the settings from the Secret's variables.
	for _, raw := range strings.Split(cfg.NATSURL, ",") {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Port() == "" {
			t.Errorf("%s: NATS URL %q: %v", svc, raw, err)
			continue
		}
		if u.User != nil {
			t.Errorf("%s: NATS URL %q carries credentials", svc, raw)
		}
		if vars["TRAWLER_NATS_PASSWORD"] != "" && (cfg.NATSPassword != vars["TRAWLER_NATS_PASSWORD"] || cfg.NATSUser != vars["TRAWLER_NATS_USER"]) {
			t.Errorf("%s: NATS user and password do not reach the settings", svc)
		}
		if vars["TRAWLER_NATS_TOKEN"] != "" && cfg.NATSToken != vars["TRAWLER_NATS_TOKEN"] {
			t.Errorf("%s: the NATS token does not reach the settings", svc)
		}
		if strings.Contains(vars["SSL_CERT_DIR"], "nats-ca") && u.Scheme != "tls" {
			t.Errorf("%s: a NATS CA is trusted but NATS is reached without TLS (%s)", svc, u.Scheme)
		}
	}
	if dirs := vars["SSL_CERT_DIR"]; dirs != "" {
		// A private CA is added to the system roots, never instead of them:
		// the fetcher still verifies web servers.
		if !slices.Contains(strings.Split(dirs, ":"), "/etc/ssl/certs") {
			t.Errorf("%s: SSL_CERT_DIR %q drops the system roots", svc, dirs)
		}
		for _, dir := range strings.Split(dirs, ":") {
			if dir != "/etc/ssl/certs" && !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir && m.ReadOnly }) {
				t.Errorf("%s: SSL_CERT_DIR names %s, which nothing is mounted at read-only", svc, dir)
			}
		}
		if strings.Contains(dirs, "redis-ca") && !cfg.RedisTLS && isStateful(svc) {
			t.Errorf("%s: a Redis CA is trusted but Redis TLS is off", svc)
		}
	}
	checkNATSCredentials(t, svc, c, d.Spec.Template.Spec, r, keys, cfg)
	// The Redis password reaches the stateful services, and only them.
	if isStateful(svc) {
		if vars["TRAWLER_REDIS_PASSWORD"] != cfg.RedisPassword {
			t.Errorf("%s: Redis password %q, the Secret holds %q", svc, cfg.RedisPassword, vars["TRAWLER_REDIS_PASSWORD"])
		}
	} else if cfg.RedisPassword != "" || len(cfg.RedisAddrs) != 0 {
		t.Errorf("%s has Redis settings it does not use", svc)
	}
	if isStateful(svc) && len(cfg.RedisAddrs) == 0 {
		t.Errorf("%s: no Redis address", svc)
	}
	if strings.Contains(cfg.NATSURL, "$(") {
		t.Errorf("%s: unexpanded reference in %q", svc, cfg.NATSURL)
	}
}

// expand applies Kubernetes' $(VAR) expansion: only variables defined
// earlier in the list are replaced. A reference to an undefined one would
// reach the process verbatim, which is a chart bug here.
func expand(t *testing.T, svc, v string, vars map[string]string) string {
	t.Helper()
	for {
		i := strings.Index(v, "$(")
		if i < 0 {
			return v
		}
		j := strings.IndexByte(v[i:], ')')
		if j < 0 {
			return v
		}
		name := v[i+2 : i+j]
		val, ok := vars[name]
		if !ok {
			t.Errorf("%s: $(%s) refers to a variable not defined before it", svc, name)
			return v
		}
		v = v[:i] + val + v[i+j+1:]
	}
}

// secretValue reads a key of a rendered Secret; a Secret the chart does not
// render must be an existing one the values named, and gets a stand-in.
func secretValue(t *testing.T, svc string, r *Rendered, ref *corev1.SecretKeySelector) string {
	t.Helper()
	if s := r.Secrets[ref.Name]; s != nil {
		v, ok := s.StringData[ref.Key]
		if !ok {
			t.Errorf("%s: Secret %s has no key %s", svc, ref.Name, ref.Key)
		}
		return v
	}
	if !strings.HasPrefix(ref.Name, "platform-") { // the existing Secret of existing-secret-values.yaml
		t.Errorf("%s: Secret %s is neither rendered nor the existing one", svc, ref.Name)
	}
	return "existing-" + ref.Key
}

// checkAutoscaling: HPAs only for fetcher and parser, pointing at rendered
// Deployments that then leave replicas to the autoscaler.
func checkAutoscaling(t *testing.T, r *Rendered) {
	t.Helper()
	scaled := map[string]bool{}
	for _, h := range r.HPAs {
		ref := h.Spec.ScaleTargetRef
		comp := h.Labels["app.kubernetes.io/component"]
		d := r.Deployments[comp]
		if comp != "fetcher" && comp != "parser" || d == nil || ref.Kind != "Deployment" || ref.Name != d.Name {
			t.Errorf("HPA %s targets %s/%s (component %s)", h.Name, ref.Kind, ref.Name, comp)
			continue
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			t.Errorf("HPA %s: replicas %v..%d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		scaled[d.Name] = true
	}
	for _, so := range r.ScaledObjects {
		if scaled[so.Spec.ScaleTargetRef.Name] {
			t.Errorf("%s is scaled by both an HPA and KEDA", so.Spec.ScaleTargetRef.Name)
		}
		scaled[so.Spec.ScaleTargetRef.Name] = true
	}
	for svc, d := range r.Deployments {
		if scaled[d.Name] == (d.Spec.Replicas != nil) {
			t.Errorf("%s: autoscaled=%v but replicas=%v (an autoscaled Deployment must leave replicas unset)", svc, scaled[d.Name], d.Spec.Replicas)
		}
		if isStateful(svc) && scaled[d.Name] {
			t.Errorf("%s is autoscaled", svc)
		}
	}
}

// checkSelectors: every PDB and Service selects exactly one component's pods.
func checkSelectors(t *testing.T, r *Rendered) {
	t.Helper()
	matches := func(sel map[string]string) []string {
		var got []string
		for svc, d := range r.Deployments {
			if labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
				got = append(got, svc)
			}
		}
		return got
	}
	for _, p := range r.PDBs {
		if got := matches(p.Spec.Selector.MatchLabels); len(got) != 1 {
			t.Errorf("PDB %s selects %v", p.Name, got)
		}
		if p.Spec.MinAvailable != nil {
			t.Errorf("PDB %s uses minAvailable: a single replica could never be drained", p.Name)
		}
	}
	for _, s := range r.Services {
		if got := matches(s.Spec.Selector); len(got) != 1 {
			t.Errorf("Service %s selects %v", s.Name, got)
		}
	}
}

// checkNetworkPolicies evaluates each component's egress rules for a few
// destinations: the fetcher reaches public web servers and nothing private;
// the others reach no public address at all.
func checkNetworkPolicies(t *testing.T, c renderCase, r *Rendered) {
	t.Helper()
	if len(r.NetworkPolicies) == 0 {
		if !slices.Contains(c.values, chartDir+"/ci/existing-secret-values.yaml") {
			t.Errorf("no NetworkPolicy rendered")
		}
		return
	}
	for _, svc := range services {
		np := r.NetworkPolicies[svc]
		if np == nil {
			t.Fatalf("no NetworkPolicy for %s", svc)
		}
		if !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(r.Deployments[svc].Spec.Template.Labels)) {
			t.Errorf("%s: NetworkPolicy does not select its pods", svc)
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("%s: egress is not restricted", svc)
		}
		public := []string{"93.184.215.14", "1.1.1.1", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"}
		private := []string{"10.96.0.1", "10.0.0.5", "172.20.1.1", "192.168.1.1", "169.254.169.254", "127.0.0.1", "100.100.100.200", "fd00::1", "fe80::1", "::1", "::ffff:10.0.0.1",
			// the fetcher's guard refuses these too (services/fetcher/guard.go)
			"192.0.2.7", "198.18.0.1", "240.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2001:db8::1", "::7f00:1"}
		for _, ip := range public {
			if got, want := egressAllows(np, ip, 443), svc == "fetcher"; got != want {
				t.Errorf("%s: egress to %s:443 allowed=%v, want %v", svc, ip, got, want)
			}
		}
		for _, ip := range private {
			for _, port := range []int{80, 443} {
				if egressAllows(np, ip, port) {
					t.Errorf("%s: egress to private %s:%d is allowed", svc, ip, port)
				}
			}
		}
		if svc == "fetcher" && egressAllows(np, "93.184.215.14", 6379) {
			t.Errorf("fetcher: egress to a public Redis port is allowed")
		}
	}
	if slices.Contains(c.values, chartDir+"/ci/full-values.yaml") {
		if egressAllows(r.NetworkPolicies["fetcher"], "1.2.3.4", 443) {
			t.Errorf("fetcher: extraDeniedCIDRs not applied")
		}
		if egressAllows(r.NetworkPolicies["fetcher"], "2001:4860::8888", 443) {
			t.Errorf("fetcher: extraDeniedCIDRsV6 not applied")
		}
	}
}

// egressAllows reports whether np's egress rules admit TCP to ip:port by an
// ipBlock (selector peers select pods, never an outside address).
func egressAllows(np *networkingv1.NetworkPolicy, ip string, port int) bool {
	addr := net.ParseIP(ip)
	for _, rule := range np.Spec.Egress {
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if proto == corev1.ProtocolTCP && p.Port != nil && p.Port.IntValue() == port {
				portOK = true
			}
		}
		if !portOK {
			continue
		}
		if len(rule.To) == 0 {
			return true
		}
		for _, peer := range rule.To {
			if peer.IPBlock == nil {
				continue
			}
			if inCIDR(addr, peer.IPBlock.CIDR) && !slices.ContainsFunc(peer.IPBlock.Except, func(c string) bool { return inCIDR(addr, c) }) {
				return true
			}
		}
	}
	return false
}

// inCIDR compares like with like: an IPv4 address (even IPv4-mapped) only
// against IPv4 blocks, as a packet has one family.
func inCIDR(ip net.IP, cidr string) bool {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return false
	}
	if (len(n.IP) == net.IPv4len) != (ip.To4() != nil && !strings.Contains(ip.String(), ":")) {
		return false
	}
	return n.Contains(ip)
}

// checkMonitoring: a ServiceMonitor exactly when the operator's API is
// there, selecting the four metrics Services on their metrics port.
func checkMonitoring(t *testing.T, c renderCase, r *Rendered) {
	t.Helper()
	want := slices.Contains(c.apiVersions, prometheusOperator) && !slices.Contains(c.values, chartDir+"/ci/existing-secret-values.yaml")
	if got := len(r.ServiceMonitors) == 1; got != want {
		t.Fatalf("%d ServiceMonitors, want one: %v", len(r.ServiceMonitors), want)
	}
	if !want {
		return
	}
	sm := r.ServiceMonitors[0]
	n := 0
	for _, s := range r.Services {
		if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
			n++
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "metrics" {
				t.Errorf("Service %s has no port named metrics", s.Name)
			}
		}
	}
	if n != len(services) {
		t.Errorf("ServiceMonitor selects %d Services, want %d", n, len(services))
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
	}
}

// checkKEDA: each ScaledObject reads the lag of the stream and durable
// consumer the service really pulls from (pkg/subjects).
func checkKEDA(t *testing.T, c renderCase, r *Rendered) {
	t.Helper()
	if !slices.Contains(c.values, chartDir+"/ci/full-values.yaml") {
		if len(r.ScaledObjects) != 0 {
			t.Errorf("ScaledObjects rendered though KEDA is off")
		}
		return
	}
	if len(r.ScaledObjects) != 2 {
		t.Fatalf("%d ScaledObjects, want fetcher and parser", len(r.ScaledObjects))
	}
	prefix := r.configValue(t, "prefix")
	names, err := subjects.New(prefix)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"fetcher": {names.StreamFetch(), names.ConsumerFetcher()},
		"parser":  {names.StreamPages(), names.ConsumerParser()},
	}
	for _, so := range r.ScaledObjects {
		comp := so.Labels["app.kubernetes.io/component"]
		w, ok := want[comp]
		if !ok || so.Spec.ScaleTargetRef.Name != r.Deployments[comp].Name {
			t.Errorf("ScaledObject %s targets %s", so.Name, so.Spec.ScaleTargetRef.Name)
			continue
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "nats-jetstream" {
			t.Fatalf("ScaledObject %s triggers %+v", so.Name, so.Spec.Triggers)
		}
		md := so.Spec.Triggers[0].Metadata
		if md["stream"] != w[0] || md["consumer"] != w[1] {
			t.Errorf("%s: KEDA watches %s/%s, the service pulls from %s/%s", comp, md["stream"], md["consumer"], w[0], w[1])
		}
		for _, k := range []string{"natsServerMonitoringEndpoint", "account", "lagThreshold"} {
			if md[k] == "" {
				t.Errorf("%s: trigger metadata %s is empty", comp, k)
			}
		}
	}
}

func (r *Rendered) configValue(t *testing.T, key string) string {
	t.Helper()
	for _, cm := range r.ConfigMaps {
		if f, ok := cm.Data["trawler.yaml"]; ok {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(f), &m); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(m[key])
		}
	}
	t.Fatal("no trawler.yaml rendered")
	return ""
}
