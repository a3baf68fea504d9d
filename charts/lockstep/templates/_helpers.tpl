{{/* The base of the objects' names: lockstep-scheduler, or nameOverride. */}}
{{- define "lockstep.name" -}}
{{- default "lockstep-scheduler" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of the release's objects (Deployment, ServiceAccount, ClusterRole, Lease, ...):
fullnameOverride if set; the name alone (lockstep-scheduler: manifests/' names) for the
release named after the chart (lockstep, as docs/install.md installs it); <release>-<name>
for any other, so that two releases never share a cluster-scoped name.
*/}}
{{- define "lockstep.fullname" -}}
{{- $name := include "lockstep.name" . -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if eq .Release.Name .Chart.Name -}}
{{- $name -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The prefix of the objects that are not the scheduler's own: the metrics-reader ClusterRole,
the metrics scraper, the dashboard's ConfigMap (lockstep-metrics-reader, ... for
lockstep-scheduler).
*/}}
{{- define "lockstep.prefix" -}}
{{- include "lockstep.fullname" . | trimSuffix "-scheduler" -}}
{{- end -}}

{{- define "lockstep.metricsReader" -}}
{{- printf "%s-metrics-reader" (include "lockstep.prefix" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "lockstep.metricsScraper" -}}
{{- printf "%s-metrics-scraper" (include "lockstep.prefix" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The metrics Service, whose name prometheus-operator gives the series as their job. */}}
{{- define "lockstep.metricsService" -}}
{{- printf "%s-metrics" (include "lockstep.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The selector of lockstep's series in Prometheus, as the chart's ServiceMonitor labels them:
job (the metrics Service, or metrics.job) and namespace. The alerts select on it, so that
they never see the default kube-scheduler's scheduler_* series or another release's.
*/}}
{{- define "lockstep.seriesSelector" -}}
job="{{ .Values.metrics.job | default (include "lockstep.metricsService" .) }}",namespace="{{ .Release.Namespace }}"
{{- end -}}

{{/*
The selector of the scheduler's pods, and app.kubernetes.io/name of every object: the
fullname (manifests/' lockstep-scheduler for the release named lockstep), so that no release
selects another's pods, even in one namespace.
*/}}
{{- define "lockstep.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lockstep.fullname" . }}
{{- end -}}

{{/* The labels of every object the chart makes. */}}
{{- define "lockstep.labels" -}}
{{ include "lockstep.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "lockstep.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "lockstep.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{/* The scheduler's KubeSchedulerConfiguration. */}}
{{- define "lockstep.schedulerConfig" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  {{- toYaml .Values.config.clientConnection | nindent 2 }}
leaderElection:
  leaderElect: true
  resourceName: {{ include "lockstep.fullname" . }}
  resourceNamespace: {{ .Release.Namespace }}
profiles:
  - schedulerName: {{ .Values.config.schedulerName }}
    plugins:
      multiPoint:
        enabled:
          - name: LockstepGang
          - name: LockstepScout
          - name: LockstepTopology
            weight: 3
      queueSort:
        disabled:
          - name: PrioritySort
      postFilter:
        enabled:
          - name: LockstepGang
          - name: LockstepTopology
        disabled:
          - name: "*"
      bind:
        enabled:
          - name: LockstepBind
        disabled:
          - name: DefaultBinder
    pluginConfig:
      - name: LockstepGang
        args:
          {{- toYaml .Values.config.gang | nindent 10 }}
      - name: LockstepTopology
        args:
          levels:
            {{- toYaml .Values.config.levels | nindent 12 }}
          {{- toYaml .Values.config.topology | nindent 10 }}
      - name: LockstepBind
        args:
          {{- toYaml .Values.config.bind | nindent 10 }}
      {{- with .Values.config.addedAffinity }}
      - name: NodeAffinity
        args:
          addedAffinity:
            {{- toYaml . | nindent 12 }}
      {{- end }}
{{- end -}}
