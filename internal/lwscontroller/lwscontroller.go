// Package lwscontroller prepares the upstream LeaderWorkerSet controller manager
// (sigs.k8s.io/lws/cmd, built from the separate tools/lws-kuberay module) to run next to lockstep with
// its admission webhooks live: the apiserver calls them by URL on loopback, so that the pods
// of a LeaderWorkerSet get their labels (group index, worker index, group key, subgroups),
// exclusive-topology affinities and LWS_* environment variables as in a real cluster, and
// LeaderWorkerSets are defaulted and validated.
//
// What upstream's main (v0.7.0) does and how it is met here:
//   - It reads a config.lws.x-k8s.io/v1alpha1 Configuration (--config, decoded strictly;
//     its defaults fill what is unset). Leader election and metrics are off (metrics'
//     bindAddress "0": the server, with its authentication filter, never starts).
//   - Its internal certificate management (open-policy-agent's cert-controller, which would
//     keep the Secret lws-webhook-server-cert in its namespace, write the certDir from it and
//     inject its CA into lws-{mutating,validating}-webhook-configuration) is off: with
//     internalCertManagement.enable false it sets its controllers and webhooks up at once
//     and its webhook server just reads tls.crt and tls.key from webhook.certDir. Certs
//     makes a throwaway CA and a serving certificate for 127.0.0.1 there; the webhook
//     configurations (WebhookConfigurations) trust the CA.
//   - Without its pod webhook the controller does not work at all: the leader StatefulSet's
//     template carries only the name, worker-index "0" and revision labels, the webhook adds
//     group-index (from the pod's ordinal) and group-key, and the pod controller refuses pods
//     without them. So both of upstream's webhook configurations are registered, as its
//     kustomization makes them (config/webhook: manifests.yaml with mutating-patch.yaml and
//     validating-patch.yaml, which restrict the pod webhooks to pods labelled
//     leaderworkerset.sigs.k8s.io/name), failure policy Fail as upstream's.
//   - The CRD (CRDPath) serves and stores v1 only: the conversion webhook upstream's
//     kustomization patches in would never be called and is left out.
//   - Worker StatefulSets are created by its pod controller when it sees a leader pod: it
//     needs a StatefulSet controller (LWS creates StatefulSets, not pods) and, for its
//     RecreateGroupOnPodRestart policy (foreground deletion of the leader pod), a garbage
//     collector.
//   - /readyz is a plain ping, answering as soon as the manager runs, before the webhooks are
//     registered (main sets them up in a goroutine): wait for the webhook paths
//     (WebhookPaths) to answer as well.
package lwscontroller

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const (
	// MutatingWebhookConfigurationName and ValidatingWebhookConfigurationName are the names
	// upstream's kustomization (namePrefix lws-) gives the webhook configurations.
	MutatingWebhookConfigurationName   = "lws-mutating-webhook-configuration"
	ValidatingWebhookConfigurationName = "lws-validating-webhook-configuration"

	// webhookTimeoutSeconds bounds every webhook call: LWS's answers are in-memory.
	webhookTimeoutSeconds = 10
)

// CRDPath is the LeaderWorkerSet CRD inside the sigs.k8s.io/lws module directory.
func CRDPath(moduleDir string) string {
	return filepath.Join(moduleDir, "config", "crd", "bases", "leaderworkerset.x-k8s.io_leaderworkersets.yaml")
}

// WebhookConfigurations reads upstream's webhook manifest (config/webhook/manifests.yaml),
// applies the kustomization's patches to it (the pod webhooks restricted to LWS pods, the
// mutating one on CREATE and UPDATE) and returns the configurations named as upstream
// installs them, each webhook calling baseURL plus the manifest's Service path and trusting
// caBundle. Failure policies and rules are upstream's.
func WebhookConfigurations(moduleDir, baseURL string, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	dir := filepath.Join(moduleDir, "config", "webhook")
	data, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return nil, nil, err
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			err = yaml.UnmarshalStrict(doc, mutating)
		case "ValidatingWebhookConfiguration":
			err = yaml.UnmarshalStrict(doc, validating)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("no LWS webhooks in %s/manifests.yaml", dir)
	}
	if err := replaceWebhooks(filepath.Join(dir, "mutating-patch.yaml"), mutating.Webhooks); err != nil {
		return nil, nil, err
	}
	if err := replaceWebhooks(filepath.Join(dir, "validating-patch.yaml"), validating.Webhooks); err != nil {
		return nil, nil, err
	}
	mutating.Name, validating.Name = MutatingWebhookConfigurationName, ValidatingWebhookConfigurationName
	for i := range mutating.Webhooks {
		h := &mutating.Webhooks[i]
		if h.ClientConfig, err = urlClientConfig(h.ClientConfig, baseURL, caBundle); err != nil {
			return nil, nil, err
		}
		h.TimeoutSeconds = ptr.To[int32](webhookTimeoutSeconds)
	}
	for i := range validating.Webhooks {
		h := &validating.Webhooks[i]
		if h.ClientConfig, err = urlClientConfig(h.ClientConfig, baseURL, caBundle); err != nil {
			return nil, nil, err
		}
		h.TimeoutSeconds = ptr.To[int32](webhookTimeoutSeconds)
	}
	return mutating, validating, nil
}

// replaceWebhooks applies a kustomize JSON 6902 patch file to webhooks, in place. Upstream's
// patches only replace whole webhooks ("replace" at /webhooks/<i>); anything else is an
// error rather than silently ignored.
func replaceWebhooks[W any](path string, webhooks []W) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value W      `json:"value"`
	}
	if err := yaml.UnmarshalStrict(data, &ops); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, op := range ops {
		i, err := strconv.Atoi(strings.TrimPrefix(op.Path, "/webhooks/"))
		if op.Op != "replace" || !strings.HasPrefix(op.Path, "/webhooks/") || err != nil || i < 0 || i >= len(webhooks) {
			return fmt.Errorf("%s: unsupported patch %s %s", path, op.Op, op.Path)
		}
		webhooks[i] = op.Value
	}
	return nil
}

// urlClientConfig turns a manifest's Service reference into a URL reference to the same
// path under baseURL: the webhook server listens on loopback, no Service can reach it.
func urlClientConfig(c admissionregistrationv1.WebhookClientConfig, baseURL string, caBundle []byte) (admissionregistrationv1.WebhookClientConfig, error) {
	if c.Service == nil || c.Service.Path == nil {
		return c, fmt.Errorf("webhook client config without a Service path: %+v", c)
	}
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + *c.Service.Path), CABundle: caBundle}, nil
}

// WebhookPaths are the paths the webhooks of the configurations call: main registers their
// handlers only after the manager started (and /readyz answers), so a webhook server that
// answers none of them with 404 is one the apiserver can use.
func WebhookPaths(mutating *admissionregistrationv1.MutatingWebhookConfiguration, validating *admissionregistrationv1.ValidatingWebhookConfiguration) ([]string, error) {
	var urls []*string
	for _, h := range mutating.Webhooks {
		urls = append(urls, h.ClientConfig.URL)
	}
	for _, h := range validating.Webhooks {
		urls = append(urls, h.ClientConfig.URL)
	}
	var paths []string
	for _, u := range urls {
		if u == nil {
			return nil, fmt.Errorf("webhook without a URL")
		}
		parsed, err := url.Parse(*u)
		if err != nil {
			return nil, err
		}
		paths = append(paths, parsed.Path)
	}
	return paths, nil
}

// WebhookBaseURL is where the webhook server listens when WriteConfig was given port.
func WebhookBaseURL(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }

// ReadyURL is the manager's readiness probe (a ping: see the package comment).
func ReadyURL(healthPort int) string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort) }

// CertDir is where WriteConfig has the webhook server of a manager configured in dir read its
// certificate.
func CertDir(dir string) string { return filepath.Join(dir, "serving-certs") }

// WriteConfig writes into dir the controller manager's configuration and returns its path:
// leader election, metrics and internal certificate management off, the webhook server on
// 127.0.0.1:webhookPort reading certs' serving certificate (written into CertDir(dir)), the
// health probe on healthPort, no gang-scheduling provider.
func WriteConfig(dir string, certs *Certs, webhookPort, healthPort int) (string, error) {
	if err := os.MkdirAll(CertDir(dir), 0o700); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"tls.crt": certs.Cert, "tls.key": certs.Key} {
		if err := os.WriteFile(filepath.Join(CertDir(dir), name), data, 0o600); err != nil {
			return "", err
		}
	}
	config := fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: 500
  burst: 1000
`, webhookPort, CertDir(dir), healthPort)
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// Certs are a throwaway CA and a serving certificate for 127.0.0.1 it signed, PEM-encoded:
// the webhook configurations trust CA, the webhook server serves Cert.
type Certs struct {
	CA, Cert, Key []byte
}

// NewCerts makes Certs valid from an hour ago for a year.
func NewCerts() (*Certs, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lws-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Certs{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
