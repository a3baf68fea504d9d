{{/* The name of the scheduler's objects. */}}
{{- define "lockstep.name" -}}
{{- default "lockstep-scheduler" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The selector of the scheduler's pods: the same as manifests/. */}}
{{- define "lockstep.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lockstep.name" . }}
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
  resourceName: {{ include "lockstep.name" . }}
  resourceNamespace: {{ .Release.Namespace }}
profiles:
  - schedulerName: {{ .Values.config.schedulerName }}
    plugins:
      multiPoint:
        enabled:
          - name: LockstepGang
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
