{{/*
lockstep.refuseClashes fails an install or upgrade that would clash with what the cluster
already runs, saying what clashes and what to do (docs/install.md):

- another scheduler configuration serving this release's config.schedulerName: a
  KubeSchedulerConfiguration in a ConfigMap of any namespace (another release's, or the one
  `kubectl apply -k manifests/` installs) with a profile of that name. Two schedulers of one
  name would both schedule its pods.
- an object this release makes where another release could make it too, that exists and is
  not this release's: its ClusterRoles and ClusterRoleBindings, its RoleBinding in kube-system
  and the dashboard's ConfigMap (named after the release, not its namespace: a release of the
  same name in another namespace makes the same ones), and its Deployment (a fullnameOverride
  another release of the namespace uses). Helm would refuse those with "invalid ownership
  metadata"; this says why and what to do.

The release's own objects (Helm's meta.helm.sh/release-name and release-namespace
annotations name it) never clash: an upgrade passes. lookup reads the cluster in helm
install, upgrade and --dry-run=server; under helm template, lint and --dry-run=client it
finds nothing, and nothing is refused. Listing the ConfigMaps of every namespace needs list
on configmaps cluster-wide, which whoever may create the chart's ClusterRoles has in practice
(cluster-admin).
*/}}
{{- define "lockstep.refuseClashes" -}}
{{- $problems := list -}}
{{- $own := dict "name" .Release.Name "namespace" .Release.Namespace -}}

{{- /* Another scheduler configuration serving config.schedulerName. */ -}}
{{- $ownConfig := printf "%s-config" (include "lockstep.fullname" .) -}}
{{- $configMaps := lookup "v1" "ConfigMap" "" "" -}}
{{- range $cm := ($configMaps.items | default list) -}}
{{- $mine := and (eq $cm.metadata.namespace $.Release.Namespace) (eq $cm.metadata.name $ownConfig) -}}
{{- if not (or $mine (eq (include "lockstep.ownedBy" (list $cm $own)) "true")) -}}
{{- range $key, $data := ($cm.data | default dict) -}}
{{- if contains "KubeSchedulerConfiguration" (toString $data) -}}
{{- $cfg := fromYaml (toString $data) -}}
{{- if eq (toString $cfg.kind) "KubeSchedulerConfiguration" -}}
{{- $names := list -}}
{{- range $p := ($cfg.profiles | default (list dict)) -}}
{{- $names = append $names ($p.schedulerName | default "default-scheduler") -}}
{{- end -}}
{{- if has $.Values.config.schedulerName $names -}}
{{- $problems = append $problems (printf "config.schedulerName %s is already served by the scheduler configuration in ConfigMap %s/%s, key %s (%s): two schedulers of one name would both schedule its pods. Give this release's profile a name of its own (--set config.schedulerName=NAME; its pods opt in with that schedulerName)." $.Values.config.schedulerName $cm.metadata.namespace $cm.metadata.name $key (include "lockstep.holder" $cm)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* Objects another release (or manifests/) already made under this release's names. */ -}}
{{- $fullname := include "lockstep.fullname" . -}}
{{- $reader := include "lockstep.metricsReader" . -}}
{{- $objects := list
  (list "rbac.authorization.k8s.io/v1" "ClusterRole" "" $fullname)
  (list "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" "" $fullname)
  (list "rbac.authorization.k8s.io/v1" "ClusterRole" "" $reader)
  (list "rbac.authorization.k8s.io/v1" "RoleBinding" "kube-system" (printf "%s-authentication-reader" $fullname))
  (list "apps/v1" "Deployment" .Release.Namespace $fullname) -}}
{{- $scraper := and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.serviceMonitor.tokenSecret.name) -}}
{{- if or .Values.metrics.readerSubjects $scraper -}}
{{- $objects = append $objects (list "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" "" $reader) -}}
{{- end -}}
{{- if .Values.metrics.dashboard.enabled -}}
{{- $objects = append $objects (list "v1" "ConfigMap" (.Values.metrics.dashboard.namespace | default .Release.Namespace) (printf "%s-grafana-dashboard" (include "lockstep.prefix" .))) -}}
{{- end -}}
{{- $taken := list -}}
{{- range $o := $objects -}}
{{- $found := lookup (index $o 0) (index $o 1) (index $o 2) (index $o 3) -}}
{{- if and $found (ne (include "lockstep.ownedBy" (list $found $own)) "true") -}}
{{- $where := ternary (index $o 3) (printf "%s/%s" (index $o 2) (index $o 3)) (eq (index $o 2) "") -}}
{{- $taken = append $taken (printf "%s %s (%s)" (index $o 1) $where (include "lockstep.holder" $found)) -}}
{{- end -}}
{{- end -}}
{{- if $taken -}}
{{- $problems = append $problems (printf "objects this release would make exist and are not its own: %s. Its cluster-scoped objects and its RoleBinding in kube-system are named after the release (or fullnameOverride), not its namespace: two releases of one name in different namespaces would share them. Name this release differently, or set fullnameOverride to a name no other release uses." (join "; " $taken)) -}}
{{- end -}}

{{- if $problems -}}
{{- fail (printf "refusing release %s in namespace %s:\n- %s" .Release.Name .Release.Namespace (join "\n- " $problems)) -}}
{{- end -}}
{{- end -}}

{{/* "true" if an object (first of the list) belongs to the release (second: name, namespace). */}}
{{- define "lockstep.ownedBy" -}}
{{- $annotations := (index . 0).metadata.annotations | default dict -}}
{{- $release := index . 1 -}}
{{- and (eq (toString (index $annotations "meta.helm.sh/release-name")) $release.name) (eq (toString (index $annotations "meta.helm.sh/release-namespace")) $release.namespace) -}}
{{- end -}}

{{/* Who made an object: the Helm release its annotations name, or none. */}}
{{- define "lockstep.holder" -}}
{{- $annotations := .metadata.annotations | default dict -}}
{{- with index $annotations "meta.helm.sh/release-name" -}}
release {{ . }} in namespace {{ index $annotations "meta.helm.sh/release-namespace" }}
{{- else -}}
no Helm release (kubectl apply -k manifests/, or another tool)
{{- end -}}
{{- end -}}
