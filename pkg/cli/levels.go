package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
)

// schedulerConfig is the part of a KubeSchedulerConfiguration the plugin reads.
type schedulerConfig struct {
	Kind     string `json:"kind"`
	Profiles []struct {
		SchedulerName string `json:"schedulerName"`
		PluginConfig  []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"pluginConfig"`
	} `json:"profiles"`
}

// schedulerLevels reads the topology levels the running scheduler uses: from the
// KubeSchedulerConfiguration in a ConfigMap its Deployment (namespace/name) mounts, the
// LockstepTopology arguments of the profile named schedulerName (the defaults when they set
// none). It says where they came from.
func schedulerLevels(ctx context.Context, kube kubernetes.Interface, deployment, schedulerName string) ([]string, string, error) {
	ns, name, ok := strings.Cut(deployment, "/")
	if !ok {
		return nil, "", fmt.Errorf("--scheduler %q: want NAMESPACE/NAME of the scheduler's Deployment", deployment)
	}
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", err
		}
		for key, data := range cm.Data {
			var cfg schedulerConfig
			if yaml.Unmarshal([]byte(data), &cfg) != nil || cfg.Kind != "KubeSchedulerConfiguration" {
				continue
			}
			for _, p := range cfg.Profiles {
				if p.SchedulerName != schedulerName {
					continue
				}
				from := fmt.Sprintf("ConfigMap %s/%s (%s), profile %s", ns, cm.Name, key, schedulerName)
				for _, pc := range p.PluginConfig {
					if pc.Name != "LockstepTopology" || len(pc.Args) == 0 {
						continue
					}
					var args configv1.LockstepTopologyArgs
					if err := yaml.Unmarshal(pc.Args, &args); err != nil {
						return nil, "", fmt.Errorf("%s: LockstepTopology args: %w", from, err)
					}
					if len(args.Levels) > 0 {
						return args.Levels, from, nil
					}
				}
				return append([]string(nil), configv1.DefaultTopologyLevels...), from + ", default levels", nil
			}
		}
	}
	return nil, "", fmt.Errorf("no KubeSchedulerConfiguration with profile %s in the ConfigMaps Deployment %s mounts", schedulerName, deployment)
}
