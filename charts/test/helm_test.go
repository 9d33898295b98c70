package charttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

const (
	chartDir = "../trawler"
	// helm built from source reports Kubernetes v1.20 unless told otherwise,
	// below the chart's kubeVersion; render for a current cluster.
	kubeVersion = "1.30.0"
	namespace   = "crawl"
	release     = "web"
)

// helmPath finds helm: $HELM, PATH, then $(go env GOPATH)/bin where .ci/run
// installs it. Without helm the tests skip, except in CI (TRAWLER_CI set).
func helmPath(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		h := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(h); err == nil {
			return h
		}
	}
	if os.Getenv("TRAWLER_CI") != "" {
		t.Fatal("helm not found (TRAWLER_CI is set: .ci/run should have installed it)")
	}
	t.Skip("helm not found; install it (go install helm.sh/helm/v3/cmd/helm@v3.22.0) or set HELM")
	return ""
}

// A renderCase is one helm template invocation.
type renderCase struct {
	name        string
	values      []string // values files, relative to this directory
	set         []string // --set arguments
	apiVersions []string // capabilities the cluster is pretended to have
}

var (
	prometheusOperator = "monitoring.coreos.com/v1/ServiceMonitor"
	kedaAPI            = "keda.sh/v1alpha1/ScaledObject"
)

// The cases every test runs over: the defaults (with and without the
// Prometheus operator), everything on, and existing Secrets with most extras off.
var cases = []renderCase{
	{name: "defaults"},
	{name: "defaults-with-prometheus-operator", apiVersions: []string{prometheusOperator}},
	{name: "full", values: []string{chartDir + "/ci/full-values.yaml"}, apiVersions: []string{prometheusOperator, kedaAPI}},
	{name: "existing-secret", values: []string{chartDir + "/ci/existing-secret-values.yaml"}, apiVersions: []string{prometheusOperator}},
	// Static ownership: one replica of dedup and frontier owning every partition.
	{name: "static-ownership", set: []string{"partitionOwnership.automatic=false"}},
	// Fetchers that parse (--with-parser), no parser replica.
	{name: "fetcher-with-parser", set: []string{"services.fetcher.extraArgs={--with-parser}", "services.parser.replicas=0", "services.parser.autoscaling.enabled=false"}},
	// Names near the limits: a long release name must still give valid names.
	{name: "long-names", set: []string{"fullnameOverride=" + strings.Repeat("a", 63)}},
	// NATS credentials as files from Secrets (issue 19 #3): a .creds file
	// the chart makes and a client certificate; an NKey seed from an
	// existing Secret.
	{name: "nats-creds", values: []string{chartDir + "/ci/nats-creds-values.yaml"}},
	{name: "nats-nkey", set: []string{"nats.auth.mode=nkey", "nats.auth.existingSecret=platform-nats", "nats.auth.nkeyKey=seed"}},
}

func (c renderCase) args(helm string) []string {
	a := []string{"template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
	for _, v := range c.values {
		a = append(a, "-f", v)
	}
	for _, s := range c.set {
		a = append(a, "--set", s)
	}
	for _, v := range c.apiVersions {
		a = append(a, "--api-versions", v)
	}
	return a
}

func runHelm(helm string, args ...string) (string, error) {
	cmd := exec.Command(helm, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// Rendered holds every object of one render, decoded into its API type.
type Rendered struct {
	Deployments     map[string]*appsv1.Deployment // by component
	ConfigMaps      map[string]*corev1.ConfigMap  // by name
	Secrets         map[string]*corev1.Secret
	Services        []*corev1.Service
	ServiceAccounts []*corev1.ServiceAccount
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	PDBs            []*policyv1.PodDisruptionBudget
	NetworkPolicies map[string]*networkingv1.NetworkPolicy // by component
	ServiceMonitors []*monitoringv1.ServiceMonitor
	ScaledObjects   []*scaledObject
	Count           int
}

// scaledObject mirrors the fields of KEDA's ScaledObject (keda.sh/v1alpha1,
// github.com/kedacore/keda/v2/apis/keda/v1alpha1) that a chart may set; the
// KEDA module itself would pull every scaler's dependencies into this one.
// Trigger metadata is map[string]string in KEDA: a number there is an error.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval  *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod   *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount  *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount  *int32 `json:"maxReplicaCount,omitempty"`
		Triggers         []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			MetricType        string            `json:"metricType,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

// decodeStrict decodes one YAML document into out; unknown or duplicate
// fields and wrongly typed values are errors.
func decodeStrict(doc []byte, out any) error {
	return yaml.UnmarshalStrict(doc, out)
}

// render runs helm template for c and decodes every object strictly.
func render(t *testing.T, helm string, c renderCase) *Rendered {
	t.Helper()
	out, err := runHelm(helm, c.args(helm)...)
	if err != nil {
		t.Fatal(err)
	}
	r := &Rendered{
		Deployments: map[string]*appsv1.Deployment{}, ConfigMaps: map[string]*corev1.ConfigMap{},
		Secrets: map[string]*corev1.Secret{}, NetworkPolicies: map[string]*networkingv1.NetworkPolicy{},
	}
	for i, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d is not YAML: %v\n%s", i, err, doc)
		}
		key := tm.APIVersion + "/" + tm.Kind
		var obj any
		switch key {
		case "apps/v1/Deployment":
			obj = &appsv1.Deployment{}
		case "v1/ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1/Secret":
			obj = &corev1.Secret{}
		case "v1/Service":
			obj = &corev1.Service{}
		case "v1/ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "autoscaling/v2/HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		case "policy/v1/PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "networking.k8s.io/v1/NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		case "monitoring.coreos.com/v1/ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		case "keda.sh/v1alpha1/ScaledObject":
			obj = &scaledObject{}
		default:
			t.Fatalf("document %d: no API type known for %s; add it to the test\n%s", i, key, doc)
		}
		if err := decodeStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: strict decoding failed: %v\n%s", key, err, doc)
		}
		checkMeta(t, key, obj.(metav1.Object))
		r.Count++
		switch o := obj.(type) {
		case *appsv1.Deployment:
			comp := o.Labels["app.kubernetes.io/component"]
			if r.Deployments[comp] != nil {
				t.Fatalf("two Deployments for component %q", comp)
			}
			r.Deployments[comp] = o
		case *corev1.ConfigMap:
			r.ConfigMaps[o.Name] = o
		case *corev1.Secret:
			r.Secrets[o.Name] = o
		case *corev1.Service:
			r.Services = append(r.Services, o)
		case *corev1.ServiceAccount:
			r.ServiceAccounts = append(r.ServiceAccounts, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.HPAs = append(r.HPAs, o)
		case *policyv1.PodDisruptionBudget:
			r.PDBs = append(r.PDBs, o)
		case *networkingv1.NetworkPolicy:
			r.NetworkPolicies[o.Labels["app.kubernetes.io/component"]] = o
		case *monitoringv1.ServiceMonitor:
			r.ServiceMonitors = append(r.ServiceMonitors, o)
		case *scaledObject:
			r.ScaledObjects = append(r.ScaledObjects, o)
		}
	}
	return r
}

// checkMeta applies the API server's rules for names and labels, which
// decoding alone does not: a Service name must be a DNS-1035 label, other
// names DNS-1123 subdomains, label values at most 63 characters.
func checkMeta(t *testing.T, key string, o metav1.Object) {
	t.Helper()
	var errs []string
	if strings.HasSuffix(key, "/Service") {
		errs = validation.IsDNS1035Label(o.GetName())
	} else {
		errs = validation.IsDNS1123Subdomain(o.GetName())
	}
	for k, v := range o.GetLabels() {
		errs = append(errs, validation.IsQualifiedName(k)...)
		errs = append(errs, validation.IsValidLabelValue(v)...)
	}
	if len(errs) > 0 {
		t.Errorf("%s %q: %v", key, o.GetName(), errs)
	}
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestLint(t *testing.T) {
	helm := helmPath(t)
	for _, c := range cases {
		args := []string{"lint", chartDir, "--strict", "--namespace", namespace, "--kube-version", kubeVersion}
		for _, v := range c.values {
			args = append(args, "-f", v)
		}
		if out, err := runHelm(helm, args...); err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, out)
		}
	}
}

// Values the chart must refuse, with the reason in the error.
func TestRefusedValues(t *testing.T) {
	helm := helmPath(t)
	for _, c := range []struct {
		set  []string
		want string
	}{
		// Two owners of every partition without automatic ownership.
		{[]string{"partitionOwnership.automatic=false", "services.dedup.replicas=2"}, "without partitionOwnership.automatic"},
		{[]string{"partitionOwnership.automatic=false", "services.frontier.replicas=3"}, "without partitionOwnership.automatic"},
		// Credentials asked for but not given.
		{[]string{"nats.auth.mode=userPassword"}, "needs nats.auth.existingSecret"},
		{[]string{"nats.auth.mode=token"}, "needs nats.auth.existingSecret"},
		{[]string{"redis.auth.enabled=true"}, "needs redis.auth.existingSecret"},
		// The schema: hardening cannot be switched off, formats are checked.
		{[]string{"securityContext.readOnlyRootFilesystem=false"}, "readOnlyRootFilesystem"},
		{[]string{"securityContext.allowPrivilegeEscalation=true"}, "allowPrivilegeEscalation"},
		{[]string{"podSecurityContext.runAsNonRoot=false"}, "runAsNonRoot"},
		{[]string{"securityContext.capabilities.add={NET_RAW}"}, "capabilities"},
		{[]string{"logFormat=xml"}, "logFormat"},
		{[]string{"config.prefix=bad prefix"}, "prefix"},
		{[]string{"config.nats=nats://elsewhere:4222"}, "config/nats"},
		// Secrets never go into the ConfigMap (issue 19 #10), and the
		// error says where they go instead.
		{[]string{"config.redis-password=hunter2"}, "redis-password': value must be '(not in config: a ConfigMap is no place for a secret; set redis.auth"},
		{[]string{"config.nats-password=hunter2"}, "nats-password': value must be '(not in config: a ConfigMap is no place for a secret; set nats.auth"},
		{[]string{"config.nats-token=hunter2"}, "nats-token': value must be '(not in config: a ConfigMap is no place for a secret; set nats.auth.mode=token"},
		{[]string{"config.nats-user=trawler"}, "set nats.auth.mode=userPassword"},
		{[]string{"config.nats-creds=/creds/user.creds"}, "set nats.auth.mode=creds"},
		{[]string{"config.nats-nkey=/nkey/user.nk"}, "set nats.auth.mode=nkey"},
		{[]string{"config.nats-tls-key=/tls/tls.key"}, "set nats.tls.clientCertSecret"},
		{[]string{"config.redis-password=(not in config: a ConfigMap is no place for a secret; set redis.auth.existingSecret or redis.auth.password)"}, "redis-password"},
		{[]string{"config.api-token=x"}, "config/api-token': value must be '(not in config: a ConfigMap is no place for a secret"},
		{[]string{"config.user-agent=-----BEGIN PRIVATE KEY-----"}, "config/user-agent': value must be '(not in config: this value is a private key or a NATS credential"},
		{[]string{"config.seeds-file=SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU"}, "a NATS credential"},
		// File credentials asked for but not given, mutual TLS without TLS.
		{[]string{"nats.auth.mode=creds"}, "needs nats.auth.existingSecret or nats.auth.creds"},
		{[]string{"nats.auth.mode=nkey"}, "needs nats.auth.existingSecret or nats.auth.nkeySeed"},
		{[]string{"nats.tls.clientCertSecret=client"}, "needs nats.tls.enabled"},
		{[]string{"networkPolicy.extraDeniedCIDRsV6={10.0.0.0/8}"}, "extraDeniedCIDRsV6"},
		{[]string{"networkPolicy.extraDeniedCIDRs={2001:db8::/32}"}, "extraDeniedCIDRs"},
		{[]string{"nats.servers={nats://host:4222}"}, "servers"},
		{[]string{"services.fetcher.keda.lagThreshold=0"}, "lagThreshold"},
		{[]string{"image.digest=latest"}, "digest"},
	} {
		rc := renderCase{set: c.set}
		out, err := runHelm(helm, rc.args(helm)...)
		if err == nil {
			t.Errorf("--set %v rendered; want an error mentioning %q", c.set, c.want)
			continue
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("--set %v: error does not mention %q:\n%s", c.set, c.want, out)
		}
	}
}
