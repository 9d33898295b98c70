package charttest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/internal/config"
)

// secretKeys are config keys that would put a credential in the ConfigMap.
var secretKeys = regexp.MustCompile(`password|passwd|secret|token|creds|nkey|tls-key`)

// checkNATSCredentials (issue 19 #3, #10): credentials reach a service
// only from Secrets, as variables read through secretKeyRef or as files
// mounted read-only from a Secret volume; one NATS authentication at a
// time; nothing secret in the ConfigMap.
func checkNATSCredentials(t *testing.T, svc string, c corev1.Container, pod corev1.PodSpec, r *Rendered, keys map[string]any, cfg config.Config) {
	t.Helper()
	for k := range keys {
		if secretKeys.MatchString(k) {
			t.Errorf("%s: trawler.yaml (a ConfigMap) holds %q", svc, k)
		}
	}
	for _, e := range c.Env {
		switch e.Name {
		case "TRAWLER_NATS_USER", "TRAWLER_NATS_PASSWORD", "TRAWLER_NATS_TOKEN", "TRAWLER_REDIS_PASSWORD":
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: %s is not read from a Secret", svc, e.Name)
			}
		}
	}
	ways := 0
	for _, set := range []bool{cfg.NATSUser != "" || cfg.NATSPassword != "", cfg.NATSToken != "", cfg.NATSCreds != "", cfg.NATSNKey != ""} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		t.Errorf("%s: %d NATS authentications at once", svc, ways)
	}
	if (cfg.NATSTLSCert == "") != (cfg.NATSTLSKey == "") {
		t.Errorf("%s: client certificate %q without its key %q, or the reverse", svc, cfg.NATSTLSCert, cfg.NATSTLSKey)
	}
	if cfg.NATSTLSCert != "" && !strings.HasPrefix(cfg.NATSURL, "tls://") {
		t.Errorf("%s: a client certificate but NATS is reached without TLS (%s)", svc, cfg.NATSURL)
	}
	for _, f := range []struct{ setting, path string }{
		{"--nats-creds", cfg.NATSCreds}, {"--nats-nkey", cfg.NATSNKey}, {"--nats-tls-cert", cfg.NATSTLSCert}, {"--nats-tls-key", cfg.NATSTLSKey},
	} {
		if f.path == "" {
			continue
		}
		secret, key := mountedSecretFile(c, pod, f.path)
		switch s := r.Secrets[secret]; {
		case secret == "":
			t.Errorf("%s: %s %s is no file of a Secret mounted read-only", svc, f.setting, f.path)
		case s != nil && s.StringData[key] == "":
			t.Errorf("%s: %s %s: Secret %s has no key %s", svc, f.setting, f.path, secret, key)
		case s == nil && !strings.HasPrefix(secret, "platform-"): // the existing Secrets of the cases
			t.Errorf("%s: %s %s: Secret %s is neither rendered nor an existing one", svc, f.setting, f.path, secret)
		}
	}
}

// mountedSecretFile names the Secret and key that file is, when a Secret
// volume is mounted read-only at its directory.
func mountedSecretFile(c corev1.Container, pod corev1.PodSpec, file string) (secret, key string) {
	for _, m := range c.VolumeMounts {
		if m.MountPath != filepath.Dir(file) || !m.ReadOnly || m.SubPath != "" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return v.Secret.SecretName, filepath.Base(file)
			}
			for _, it := range v.Secret.Items {
				if it.Path == filepath.Base(file) {
					return v.Secret.SecretName, it.Key
				}
			}
		}
	}
	return "", ""
}
