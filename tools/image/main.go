// Command image writes lockstep-scheduler's OCI image, for every platform it is given a
// binary of, to an OCI image layout in a tarball (an "oci-archive"), with go-containerregistry
// and no container engine or registry:
//
//	go run . -out lockstep-scheduler.tar -tag ghcr.io/lockstep-sched/lockstep-scheduler:v0.1.0 \
//	  -version v0.1.0 -revision $(git rev-parse HEAD) -created 2026-11-24T00:00:00Z \
//	  -binary linux/amd64=../../_output/image/linux_amd64/lockstep-scheduler \
//	  -binary linux/arm64=../../_output/image/linux_arm64/lockstep-scheduler
//
// Each platform's image is the binary alone (/lockstep-scheduler, statically linked), run as
// the non-root user 65532 with the binary as its entrypoint, the OCI labels naming its
// version, commit, source and license; the platforms' images are one index, tagged with the
// reference given. `crane push --index DIR` or `skopeo copy --all oci-archive:FILE docker://REF`
// pushes it; `docker load` (Docker 25 and later) and `podman load` load it. The same inputs
// give the same bytes: file times and the images' creation time are the commit's date.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// binaryPath is where the image holds the scheduler, and its entrypoint.
	binaryPath = "/lockstep-scheduler"
	// nonRoot is the user the scheduler runs as (distroless' nonroot, which the Deployment's
	// securityContext names too).
	nonRoot = "65532:65532"
	source  = "https://github.com/lockstep-sched/lockstep"
)

// binaries is the repeatable -binary OS/ARCH[/VARIANT]=PATH flag.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || strings.Count(platform, "/") < 1 {
		return fmt.Errorf("want OS/ARCH=PATH, got %q", s)
	}
	b[platform] = path
	return nil
}

func main() {
	bins := binaries{}
	out := flag.String("out", "lockstep-scheduler.tar", "The OCI archive to write.")
	tag := flag.String("tag", "", "The image reference the index is tagged with (org.opencontainers.image.ref.name).")
	version := flag.String("version", "", "lockstep's version (the org.opencontainers.image.version label).")
	revision := flag.String("revision", "", "The commit the binaries are built from.")
	created := flag.String("created", "", "RFC 3339 time of the images and their files (the commit's date, for reproducible bytes).")
	flag.Var(bins, "binary", "OS/ARCH[/VARIANT]=PATH of the scheduler binary for a platform; repeat for each platform.")
	flag.Parse()
	if err := run(*out, *tag, *version, *revision, *created, bins); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out, tag, version, revision, created string, bins binaries) error {
	if len(bins) == 0 || tag == "" || version == "" {
		return fmt.Errorf("-binary, -tag and -version are required")
	}
	when := time.Unix(0, 0).UTC()
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		when = t.UTC()
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "lockstep-scheduler",
		"org.opencontainers.image.description": "Kubernetes scheduler with gang, composite-gang and hierarchical topology scheduling",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     when.Format(time.RFC3339),
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range sortedKeys(bins) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return err
		}
		img, err := image(bins[platform], *p, labels, when)
		if err != nil {
			return fmt.Errorf("%s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}

	dir, err := os.MkdirTemp("", "lockstep-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return archive(dir, out, when)
}

// image is one platform's image: the binary as its only layer.
func image(binary string, p v1.Platform, labels map[string]string, when time.Time) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Name: strings.TrimPrefix(binaryPath, "/"), Mode: 0o755, Size: int64(len(data)),
		ModTime: when, Typeflag: tar.TypeReg, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: when}, CreatedBy: "make image (lockstep tools/image)", Comment: "lockstep-scheduler binary"},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant, cfg.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
	cfg.Created = v1.Time{Time: when}
	cfg.Config.User = nonRoot
	cfg.Config.Entrypoint = []string{binaryPath}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = labels
	return mutate.ConfigFile(img, cfg)
}

// archive writes the OCI layout in dir to a tarball, its entries sorted and timed at when.
func archive(dir, out string, when time.Time) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: when, Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
