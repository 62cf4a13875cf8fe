{{/*
Chart name, truncated to 63 characters: Kubernetes names and label values
may not be longer.
*/}}
{{- define "rvsync-slo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects: <release>-<chart>, or the release name
when it already contains the chart name, so `helm install rvsync-slo` makes
objects called rvsync-slo, not rvsync-slo-rvsync-slo. Prometheus' job label is
the Service name, so it contains "rvsync" and the default up selector of the
exporter-down alerts finds it.
*/}}
{{- define "rvsync-slo.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart label value: name-version, with "+" (not allowed in label values) replaced.
*/}}
{{- define "rvsync-slo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object: the app.kubernetes.io set, so tools can tell which
release and version made an object.
*/}}
{{- define "rvsync-slo.labels" -}}
helm.sh/chart: {{ include "rvsync-slo.chart" . }}
{{ include "rvsync-slo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rvsync-slo
{{- end }}

{{/*
Selector labels: immutable in a Deployment's selector, so they hold only
what never changes across upgrades (name and instance).
*/}}
{{- define "rvsync-slo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rvsync-slo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
ServiceAccount the exporter runs as, and that the RBAC bindings name.
*/}}
{{- define "rvsync-slo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rvsync-slo.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Exporter image: repository@digest when a digest is set, else repository:tag
with the tag defaulting to the chart's appVersion.
*/}}
{{- define "rvsync-slo.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
Name of a `resources` entry, which is a name or {name, space}.
*/}}
{{- define "rvsync-slo.resourceName" -}}
{{- if kindIs "string" . }}{{ . }}{{ else }}{{ .name }}{{ end }}
{{- end }}

{{/*
ClusterRole rules: list and watch on exactly the configured resources (plus
configmaps when the canary is on), one
rule per API group, without wildcards. Secrets need rbac.allowSecrets:
listing them cannot be granted without their data.
*/}}
{{- define "rvsync-slo.watchRules" -}}
{{- $byGroup := dict }}
{{- range .Values.resources }}
{{- $name := include "rvsync-slo.resourceName" . }}
{{- if and (eq $name "secrets") (not $.Values.rbac.allowSecrets) }}
{{- fail "resources: watching secrets grants list/watch on Secrets, which RBAC cannot tell apart from reading their data; set rbac.allowSecrets=true to grant it knowingly" }}
{{- end }}
{{- $parts := splitn "." 2 $name }}
{{- $group := $parts._1 | default "" }}
{{- $_ := set $byGroup $group (append (get $byGroup $group | default list) $parts._0) }}
{{- end }}
{{- if .Values.canary.enabled }}
{{- /* the exporter watches its canary ConfigMaps through a cluster-wide informer, like every resource */}}
{{- $_ := set $byGroup "" (append (get $byGroup "" | default list) "configmaps") }}
{{- end }}
{{- range $group := keys $byGroup | sortAlpha }}
- apiGroups: [{{ $group | quote }}]
  resources: {{ get $byGroup $group | uniq | sortAlpha | toJson }}
  verbs: ["list", "watch"]
{{- end }}
{{- end }}

{{/*
ClusterRole rules of secure metrics: what the system:auth-delegator
ClusterRole grants, so the exporter can check each scrape's bearer token
(TokenReview) and its right to get /metrics (SubjectAccessReview).
*/}}
{{- define "rvsync-slo.authDelegatorRules" -}}
{{- if .Values.metrics.secure }}
- apiGroups: ["authentication.k8s.io"]
  resources: ["tokenreviews"]
  verbs: ["create"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
{{- end }}
{{- end }}

{{/*
The exporter's config file (exporter.Config, read strictly by the exporter:
keys here must exist there).
*/}}
{{- define "rvsync-slo.config" -}}
{{- $e := .Values.exporter }}
listenAddress: {{ printf ":%v" $e.port | quote }}
probeInterval: {{ $e.probeInterval }}
logLevel: {{ $e.logLevel }}
maxResources: {{ $e.maxResources }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
canary:
  enabled: {{ .Values.canary.enabled }}
  interval: {{ .Values.canary.interval }}
  deadline: {{ .Values.canary.deadline }}
  namespace: {{ .Release.Namespace }}
{{- if .Values.sharding.enabled }}
# the StatefulSet's pod <fullname>-N is shard N of totalShards
totalShards: {{ .Values.sharding.shards }}
shardFromPodName: true
{{- end }}
{{- if .Values.metrics.secure }}
secureMetrics: true
{{- with include "rvsync-slo.metricsCertDir" . }}
metricsCertDir: {{ . }}
{{- end }}
{{- else if .Values.metrics.certSecret }}
{{- fail "metrics.certSecret: the certificate is only served with metrics.secure=true" }}
{{- end }}
{{- end }}

{{/*
Scheme of the metrics port: https with secure metrics.
*/}}
{{- define "rvsync-slo.scheme" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/*
Where the metrics certificate Secret (tls.crt, tls.key) is mounted; empty
when the exporter makes a self-signed one.
*/}}
{{- define "rvsync-slo.metricsCertDir" -}}
{{- if and .Values.metrics.secure .Values.metrics.certSecret }}/etc/rvsync-tls{{ end }}
{{- end }}

{{/*
The SLO rule file: the generated template files/rules/rvsync-slo.rules.tpl.yaml
rendered with the values (thresholds, objectives, selectors, cluster label,
runbook prefix). The PrometheusRule and the rules ConfigMap both use it.
*/}}
{{- define "rvsync-slo.rules" -}}
{{- range $k, $_ := .Values.slo.extraLabels }}
{{- if has $k (list "alertname" "severity" "slo" "resource" "long_window" "short_window") }}
{{- fail (printf "slo.extraLabels: %q is set by the rules themselves; pick another label name" $k) }}
{{- end }}
{{- end }}
{{- tpl (.Files.Get "files/rules/rvsync-slo.rules.tpl.yaml") . | trim }}
{{- end }}

{{/*
Histogram bucket matcher of an event-ratio threshold, written as the rule
generator writes it: le="1.5" for a fraction; le=~"30(\\.0)?" for a whole
number, which Prometheus 3 stores as "30.0" and Prometheus 2 as "30".
*/}}
{{- define "rvsync-slo.leMatcher" -}}
{{- $v := toString . }}
{{- if or (contains "." $v) (contains "e" $v) }}le="{{ $v }}"{{ else }}le=~"{{ $v }}(\\.0)?"{{ end }}
{{- end }}
