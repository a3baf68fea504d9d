// Package kueuecontroller prepares the upstream Kueue controller manager
// (sigs.k8s.io/kueue/cmd/kueue, built from the separate tools/kueue module) to run next to
// lockstep with its admission webhooks live: the apiserver calls them by URL on loopback,
// so that a Job labelled kueue.x-k8s.io/queue-name is suspended on create, as in a real
// cluster, and Kueue's own kinds are defaulted, validated and converted.
//
// What upstream's main (v0.15.0) does and how it is met here:
//   - It reads a config.kueue.x-k8s.io/v1beta2 Configuration (--config). Leader election,
//     metrics and the visibility server (feature VisibilityOnDemand, a fixed port 8082) are
//     off; only the integrations Options.Frameworks names are on (batch/job unless told
//     otherwise), and only their webhooks and those of Kueue's own kinds are registered.
//   - An integration whose kind is not served when Kueue starts (the JobSet CRD, for
//     jobset.x-k8s.io/jobset) gets its webhook at once but its controller only once a
//     poll finds the kind served, with a backoff from 1s doubling up to 2 minutes
//     (jobframework.SetupControllers, waitForAPI): a JobSet created meanwhile is suspended
//     by the webhook and waits for that poll. Install such a CRD before Kueue starts.
//   - Its internal certificate management cannot be turned off outside a pod: with
//     internalCertManagement.enable false, main insists on a metrics serving certificate at
//     the fixed path /etc/kueue/metrics/certs (even with metrics off) and exits without it.
//     So it stays on, and is handed a certificate it accepts: open-policy-agent's
//     cert-controller keeps the Secret kueue-webhook-server-cert in Kueue's namespace as it
//     finds it when the CA and serving certificate there are valid (for
//     kueue-webhook-service.kueue-system.svc, 90 days ahead). Certs makes such a pair whose
//     serving certificate is also valid for 127.0.0.1, the Secret is created before Kueue
//     starts and the same files are written into the webhook server's certDir, where the
//     kubelet would mount the Secret. The rotator then only injects the CA (the one given
//     here already) into the two webhook configurations (named as upstream's kustomization
//     names them) and the CRDs' conversion webhooks.
//   - The rotator never reports the certificates ready, and Kueue never starts, while a
//     CRD it injects into exists without a conversion webhook: CRDs sets those that
//     upstream's kustomization patches in (LocalQueue, ClusterQueue, Cohort, Workload,
//     MultiKueueCluster) to its /convert by URL. They are needed anyway: Kueue reads and
//     writes v1beta2 and the CRDs store v1beta1.
//   - At start it parses the apiserver's version as a semantic version and exits if it
//     cannot, as with an unstamped build's (the integration tests' in-process apiserver
//     reports v0.0.0-master+$Format:%H$; testenv gives Kueue a proxy that reports a
//     release's).
//   - Its controllers watch every Kueue kind (MultiKueue and topology-aware scheduling are
//     on by default): install all the CRDs first.
//   - /readyz (ReadyURL) answers once the certificates are in place and the webhook server
//     listens.
package kueuecontroller

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const (
	// Namespace is Kueue's own namespace (its Configuration's default): it keeps its
	// webhook certificate Secret there and manages no Job there.
	Namespace = "kueue-system"
	// SecretName is the Secret Kueue's certificate rotator keeps the CA and serving
	// certificate in (the Configuration's default webhookSecretName).
	SecretName = "kueue-webhook-server-cert"
	// MutatingWebhookConfigurationName and ValidatingWebhookConfigurationName are the names
	// upstream's kustomization gives the webhook configurations, which the rotator injects
	// its CA into.
	MutatingWebhookConfigurationName   = "kueue-mutating-webhook-configuration"
	ValidatingWebhookConfigurationName = "kueue-validating-webhook-configuration"

	// serviceDNSName is the name the rotator requires the serving certificate to be valid
	// for: the Configuration's default webhookServiceName in Namespace.
	serviceDNSName = "kueue-webhook-service." + Namespace + ".svc"
	// caName is the name the rotator requires the CA certificate to be valid for.
	caName = "kueue-ca"
	// webhookTimeoutSeconds bounds every webhook call: Kueue's answers are in-memory.
	webhookTimeoutSeconds = 10
)

// Kueue's names (integrations.frameworks) of the integrations the tests enable.
const (
	// FrameworkBatchJob is batch/v1 Jobs, the one integration on unless Options say otherwise.
	FrameworkBatchJob = "batch/job"
	// FrameworkJobSet is jobset.x-k8s.io/v1alpha2 JobSets: it needs the JobSet CRD served
	// when Kueue starts (see the package comment).
	FrameworkJobSet = "jobset.x-k8s.io/jobset"
	// FrameworkTrainJob is Kubeflow Trainer's trainer.kubeflow.org/v1alpha1 TrainJobs (Kueue
	// v0.15.0 is built against Trainer v2.1.0's types): Kueue suspends a TrainJob and admits
	// it as one Workload whose pod sets it computes from the TrainJob's runtime, and its
	// controller owns the JobSet Trainer makes. It needs the TrainJob, TrainingRuntime and
	// ClusterTrainingRuntime CRDs served when Kueue starts (see the package comment), and the
	// JobSet one (it watches the JobSets TrainJobs own).
	FrameworkTrainJob = "trainer.kubeflow.org/trainjob"
)

// webhookResources are the group/resource pairs whose webhooks WebhookConfigurations keeps:
// Kueue's own kinds ("kueue.x-k8s.io/*") and the resource of each integration in
// frameworks, the ones the Configuration enables; the others' webhooks would call handlers
// of integrations that are off, for kinds that may have no CRD here. An integration
// "<group>/<kind>" is the resource "<group>/<kind>s" (batch/jobs, jobset.x-k8s.io/jobsets,
// kubeflow.org/mpijobs...); the pod-based integrations (pod, deployment, statefulset) are
// not supported.
func webhookResources(frameworks []string) (map[string]bool, error) {
	out := map[string]bool{"kueue.x-k8s.io/*": true}
	for _, f := range frameworks {
		group, kind, ok := strings.Cut(f, "/")
		if !ok || group == "" || kind == "" || strings.Contains(kind, "/") {
			return nil, fmt.Errorf("integration %q: only <group>/<kind> integrations are supported here", f)
		}
		out[group+"/"+kind+"s"] = true
	}
	return out, nil
}

// crdDir is where the Kueue CRDs are inside the sigs.k8s.io/kueue module directory.
func crdDir(moduleDir string) string {
	return filepath.Join(moduleDir, "config", "components", "crd")
}

// CRDs reads every Kueue CRD from the module directory, with the conversion webhook that
// upstream's kustomization patches in set to baseURL/convert, trusting caBundle.
func CRDs(moduleDir, baseURL string, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	conversions, err := conversionPatches(crdDir(moduleDir))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(crdDir(moduleDir), "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Kueue CRDs in %s: %v", crdDir(moduleDir), err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := readYAML(f, crd); err != nil {
			return nil, err
		}
		if conv, ok := conversions[crd.Name]; ok {
			conv.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{
				URL:      ptr.To(baseURL + "/convert"),
				CABundle: caBundle,
			}
			crd.Spec.Conversion = conv
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// conversionPatches returns, by CRD name, the conversion of each patch listed in the CRD
// kustomization (upstream's patches/webhook_in_*.yaml, which point at the webhook Service).
func conversionPatches(dir string) (map[string]*apiextensionsv1.CustomResourceConversion, error) {
	var kustomization struct {
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	if err := readYAML(filepath.Join(dir, "kustomization.yaml"), &kustomization); err != nil {
		return nil, err
	}
	out := map[string]*apiextensionsv1.CustomResourceConversion{}
	for _, p := range kustomization.Patches {
		patch := &apiextensionsv1.CustomResourceDefinition{}
		if err := readYAML(filepath.Join(dir, p.Path), patch); err != nil {
			return nil, err
		}
		if c := patch.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil {
			out[patch.Name] = c
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no conversion webhook patches in %s/kustomization.yaml", dir)
	}
	return out, nil
}

// WebhookConfigurations reads upstream's webhook manifest (config/components/webhook) and
// returns its configurations named as upstream installs them, with only the webhooks of
// Kueue's kinds and of the integrations frameworks (Kueue's names; nil is batch/job only,
// as Options.EnabledFrameworks), each calling baseURL plus the manifest's Service path
// and trusting caBundle. Failure policies and rules are upstream's. Every integration must
// have a mutating and a validating webhook in the manifest.
func WebhookConfigurations(moduleDir, baseURL string, caBundle []byte, frameworks []string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	keep, err := webhookResources(Options{Frameworks: frameworks}.EnabledFrameworks())
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(filepath.Join(moduleDir, "config", "components", "webhook", "manifests.yaml"))
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
	mutating.Name, validating.Name = MutatingWebhookConfigurationName, ValidatingWebhookConfigurationName
	var convErr error
	// toURL points a kept webhook at baseURL, remembering the first manifest entry it
	// cannot.
	toURL := func(c admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		out, err := urlClientConfig(c, baseURL, caBundle)
		if err != nil && convErr == nil {
			convErr = err
		}
		return out
	}
	// covered counts, per kept resource, the mutating and the validating webhooks kept for
	// it.
	covered := map[string][2]int{}
	count := func(rules []admissionregistrationv1.RuleWithOperations, i int) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					c := covered[g+"/"+res]
					c[i]++
					covered[g+"/"+res] = c
				}
			}
		}
	}
	var mutatingHooks []admissionregistrationv1.MutatingWebhook
	for _, h := range mutating.Webhooks {
		if keepWebhook(keep, h.Rules) {
			h.ClientConfig, h.TimeoutSeconds = toURL(h.ClientConfig), ptr.To[int32](webhookTimeoutSeconds)
			mutatingHooks = append(mutatingHooks, h)
			count(h.Rules, 0)
		}
	}
	var validatingHooks []admissionregistrationv1.ValidatingWebhook
	for _, h := range validating.Webhooks {
		if keepWebhook(keep, h.Rules) {
			h.ClientConfig, h.TimeoutSeconds = toURL(h.ClientConfig), ptr.To[int32](webhookTimeoutSeconds)
			validatingHooks = append(validatingHooks, h)
			count(h.Rules, 1)
		}
	}
	if convErr != nil {
		return nil, nil, convErr
	}
	if len(mutatingHooks) == 0 || len(validatingHooks) == 0 {
		return nil, nil, fmt.Errorf("no Kueue webhooks in the manifest of %s", moduleDir)
	}
	for res := range keep {
		if c := covered[res]; !strings.HasSuffix(res, "/*") && (c[0] == 0 || c[1] == 0) {
			return nil, nil, fmt.Errorf("the manifest of %s has %d mutating and %d validating webhooks for %s, want both", moduleDir, c[0], c[1], res)
		}
	}
	mutating.Webhooks, validating.Webhooks = mutatingHooks, validatingHooks
	return mutating, validating, nil
}

// keepWebhook reports whether every resource a webhook's rules match is one of keep
// (webhookResources).
func keepWebhook(keep map[string]bool, rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if !keep[g+"/*"] && !keep[g+"/"+res] {
					return false
				}
			}
		}
	}
	return len(rules) > 0
}

// urlClientConfig turns a manifest's Service reference into a URL reference to the same
// path under baseURL: the webhook server listens on loopback, no Service can reach it.
func urlClientConfig(c admissionregistrationv1.WebhookClientConfig, baseURL string, caBundle []byte) (admissionregistrationv1.WebhookClientConfig, error) {
	if c.Service == nil || c.Service.Path == nil {
		return c, fmt.Errorf("webhook client config without a Service path: %+v", c)
	}
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + *c.Service.Path), CABundle: caBundle}, nil
}

// WebhookBaseURL is where the webhook server listens when WriteConfig was given port.
func WebhookBaseURL(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }

// ReadyURL is the probe that answers once the certificates are in place and the webhook
// server listens; the controllers start with it.
func ReadyURL(healthPort int) string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort) }

// CertDir is where WriteConfig has the webhook server of a manager configured in dir read its
// certificate.
func CertDir(dir string) string { return filepath.Join(dir, "serving-certs") }

// WriteConfig writes into dir the controller manager's configuration and returns its path:
// namespace Namespace, leader election, metrics and the visibility server off, the
// integrations opts.EnabledFrameworks only (batch/job by default), the webhook server on
// 127.0.0.1:webhookPort reading certs (written into CertDir(dir) as the kubelet would mount
// the Secret), the health probe on healthPort, and the opts a test asks for.
func WriteConfig(dir string, certs *Certs, webhookPort, healthPort int, opts Options) (string, error) {
	if err := os.MkdirAll(CertDir(dir), 0o700); err != nil {
		return "", err
	}
	for name, data := range certs.files() {
		if err := os.WriteFile(filepath.Join(CertDir(dir), name), data, 0o600); err != nil {
			return "", err
		}
	}
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookSecretName: %s
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
integrations:
  frameworks:
%sfeatureGates:
  VisibilityOnDemand: false
`, Namespace, SecretName, webhookPort, CertDir(dir), healthPort, opts.frameworksYAML()) + opts.yaml()
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// Options are the parts of Kueue's configuration a test sets; the zero value is Kueue's
// defaults.
type Options struct {
	// WaitForPodsReadyTimeout, when set, turns on waitForPodsReady: an admitted workload whose
	// pods are not all ready within it is evicted and requeued (after a backoff of
	// RequeueBackoffBaseSeconds, doubling).
	WaitForPodsReadyTimeout   time.Duration
	RequeueBackoffBaseSeconds int32
	// Frameworks are the integrations Kueue enables (integrations.frameworks, Kueue's names:
	// FrameworkBatchJob, FrameworkJobSet, ...); empty is [FrameworkBatchJob]. Only their
	// webhooks are registered (WebhookConfigurations), and the kinds must be served before
	// Kueue starts.
	Frameworks []string
}

// EnabledFrameworks are the integrations Kueue enables: Frameworks, or batch/job alone.
func (o Options) EnabledFrameworks() []string {
	if len(o.Frameworks) == 0 {
		return []string{FrameworkBatchJob}
	}
	return o.Frameworks
}

// Enables reports whether Kueue enables the integration framework.
func (o Options) Enables(framework string) bool {
	for _, f := range o.EnabledFrameworks() {
		if f == framework {
			return true
		}
	}
	return false
}

// frameworksYAML is the list under integrations.frameworks.
func (o Options) frameworksYAML() string {
	var b strings.Builder
	for _, f := range o.EnabledFrameworks() {
		fmt.Fprintf(&b, "  - %s\n", f)
	}
	return b.String()
}

func (o Options) yaml() string {
	if o.WaitForPodsReadyTimeout == 0 {
		return ""
	}
	return fmt.Sprintf(`waitForPodsReady:
  timeout: %s
  requeuingStrategy:
    timestamp: Eviction
    backoffBaseSeconds: %d
`, o.WaitForPodsReadyTimeout, max(o.RequeueBackoffBaseSeconds, 1))
}

// Certs are a throwaway CA and a serving certificate it signed, PEM-encoded, in the shape
// Kueue's certificate rotator keeps and accepts (RSA keys in PKCS #1, the CA valid for
// kueue-ca, the serving certificate for Kueue's webhook Service name), the serving one also
// valid for 127.0.0.1, where the apiserver calls it.
type Certs struct {
	CA, CAKey, Cert, Key []byte
}

// NewCerts makes Certs valid from an hour ago for a year: the rotator replaces certificates
// that expire within 90 days.
func NewCerts() (*Certs, error) {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: caName, Organization: []string{"kueue"}},
		DNSNames:              []string{caName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: serviceDNSName},
		DNSNames:     []string{serviceDNSName},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &Certs{
		CA:    pemBlock("CERTIFICATE", caDER),
		CAKey: pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(caKey)),
		Cert:  pemBlock("CERTIFICATE", der),
		Key:   pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)),
	}, nil
}

// files are the Secret's keys, which are also the file names in the certDir.
func (c *Certs) files() map[string][]byte {
	return map[string][]byte{"ca.crt": c.CA, "ca.key": c.CAKey, "tls.crt": c.Cert, "tls.key": c.Key}
}

// Secret is the Secret (SecretName in Namespace) Kueue's rotator reads its certificates from.
func (c *Certs) Secret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: Namespace},
		Data:       c.files(),
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// readYAML decodes the YAML file at path into out.
func readYAML(path string, out any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
