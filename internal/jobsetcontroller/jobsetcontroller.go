// Package jobsetcontroller prepares the upstream JobSet controller (sigs.k8s.io/jobset, built
// from the separate tools/controllers module) to run next to lockstep without webhooks and
// without cert-manager, as the integration tests and the demo run it.
package jobsetcontroller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CRDPath is the JobSet CRD inside the sigs.k8s.io/jobset module directory.
func CRDPath(moduleDir string) string {
	return filepath.Join(moduleDir, "config", "components", "crd", "bases", "jobset.x-k8s.io_jobsets.yaml")
}

// WriteConfig writes into dir the controller's configuration and returns its path: leader
// election, metrics and JobSet's own certificate management off, the health probe on
// healthPort. Upstream's main always starts its webhook server, which will not start
// without a certificate: it gets a throwaway self-signed one and a loopback port, and the
// apiserver never calls it (no webhook is registered).
func WriteConfig(dir string, webhookPort, healthPort int) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := SelfSignedCert(dir); err != nil {
		return "", err
	}
	config := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
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
`, webhookPort, dir, healthPort)
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// ReadyURL is the probe that answers once the webhook server runs, which upstream's main
// starts after the JobSet and Pod reconcilers are set up.
func ReadyURL(healthPort int) string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort) }

// SelfSignedCert writes into dir tls.crt and tls.key, a throwaway self-signed serving
// certificate for 127.0.0.1, where controller-runtime's webhook server reads them. The
// upstream controllers' mains start their webhook servers whether or not any webhook is
// registered with the apiserver, and a webhook server does not start without a certificate:
// the Trainer controller manager (internal/trainercontroller) gets one too.
func SelfSignedCert(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "unused-webhook"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for name, block := range map[string]*pem.Block{
		"tls.crt": {Type: "CERTIFICATE", Bytes: der},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	return nil
}
