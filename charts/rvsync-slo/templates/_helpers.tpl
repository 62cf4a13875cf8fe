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
Namespace of the release's namespaced objects: namespaceOverride, for a
parent chart or a GitOps tool that renders into another namespace than the
release's, else the release namespace.
*/}}
{{- define "rvsync-slo.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace }}
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
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
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
Exporter image: [registry/]repository@digest when a digest is set, else
[registry/]repository:tag with the tag defaulting to the chart's appVersion.
global.imageRegistry wins over image.registry, so a parent chart or a
mirror moves every image at once.
*/}}
{{- define "rvsync-slo.image" -}}
{{- $registry := .Values.global.imageRegistry | default .Values.image.registry }}
{{- $repo := .Values.image.repository }}
{{- if $registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $registry) $repo }}{{ end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
Image pull secrets: imagePullSecrets plus global.imagePullSecrets, whose
entries may be {name: ...} or bare names (both forms circulate among
prometheus-community and Bitnami parent charts), without duplicates.
*/}}
{{- define "rvsync-slo.imagePullSecrets" -}}
{{- $names := list }}
{{- range concat .Values.imagePullSecrets .Values.global.imagePullSecrets }}
{{- if kindIs "string" . }}{{ $names = append $names . }}{{ else }}{{ $names = append $names .name }}{{ end }}
{{- end }}
{{- range $names | uniq }}
- name: {{ . }}
{{- end }}
{{- end }}

{{/*
Name of a watchedResources entry, which is a name or {name, space,
convergence, observedGenerationPath}.
*/}}
{{- define "rvsync-slo.resourceName" -}}
{{- if kindIs "string" . }}{{ . }}{{ else }}{{ .name }}{{ end }}
{{- end }}

{{/*
Every resource the exporter watches, as JSON {"names": [...]}: the watched
resources, then the canary's when the canary is on and they are not watched
already, as the exporter's config.Config.Defaults adds them.
*/}}
{{- define "rvsync-slo.allResources" -}}
{{- $names := list }}
{{- range .Values.watchedResources }}
{{- $names = append $names (include "rvsync-slo.resourceName" .) }}
{{- end }}
{{- if .Values.canary.enabled }}
{{- range .Values.canary.resources }}
{{- if not (has . $names) }}{{ $names = append $names . }}{{ end }}
{{- end }}
{{- end }}
{{- dict "names" $names | toJson }}
{{- end }}

{{/*
RBAC rules granting verbs on resources (a list of plural.group names): one
rule per API group, without wildcards.
*/}}
{{- define "rvsync-slo.rulesFor" -}}
{{- $byGroup := dict }}
{{- range .resources }}
{{- $parts := splitn "." 2 . }}
{{- $group := $parts._1 | default "" }}
{{- $_ := set $byGroup $group (append (get $byGroup $group | default list) $parts._0) }}
{{- end }}
{{- range $group := keys $byGroup | sortAlpha }}
- apiGroups: [{{ $group | quote }}]
  resources: {{ get $byGroup $group | uniq | sortAlpha | toJson }}
  verbs: {{ $.verbs | toJson }}
{{- end }}
{{- end }}

{{/*
ClusterRole rules: list and watch on exactly the resources the exporter
watches (rvsync-slo.allResources: the canary's are watched through
cluster-wide informers, like every resource). Secrets need
rbac.allowSecrets: listing them cannot be granted without their data.
*/}}
{{- define "rvsync-slo.watchRules" -}}
{{- $names := (include "rvsync-slo.allResources" . | fromJson).names }}
{{- if and (has "secrets" $names) (not .Values.rbac.allowSecrets) }}
{{- fail "watchedResources: watching secrets grants list/watch on Secrets, which RBAC cannot tell apart from reading their data; set rbac.allowSecrets=true to grant it knowingly" }}
{{- end }}
{{- include "rvsync-slo.rulesFor" (dict "resources" $names "verbs" (list "list" "watch")) }}
{{- end }}

{{/*
Go duration (e.g. 1m30s, 500ms) in seconds, as a string; the schema has
checked the syntax. Templates have no duration parser, and the checks of
rvsync-slo.validate compare durations as the exporter does.
*/}}
{{- define "rvsync-slo.seconds" -}}
{{- $unit := dict "ns" 1e-9 "us" 1e-6 "µs" 1e-6 "ms" 1e-3 "s" 1.0 "m" 60.0 "h" 3600.0 "d" 86400.0 "w" 604800.0 "y" 31536000.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w|y)" . -1 }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . }}
{{- $total = addf $total (mulf ($num | float64) (get $unit (trimPrefix $num .))) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
Refuses, at `helm template` and `helm install`, the values that would make
the exporter exit 2 at start and the pod crash-loop: the exporter's own
checks (exporter/config.Config.Validate), in its words, with the values'
names for its settings.
*/}}
{{- define "rvsync-slo.validate" -}}
{{- $seen := list }}
{{- range $i, $r := .Values.watchedResources }}
{{- $name := include "rvsync-slo.resourceName" $r }}
{{- if has $name $seen }}
{{- fail (printf "watchedResources[%d]: %q listed twice" $i $name) }}
{{- end }}
{{- $seen = append $seen $name }}
{{- end }}
{{- $all := (include "rvsync-slo.allResources" . | fromJson).names }}
{{- $max := int .Values.exporter.maxResources }}
{{- if gt (len $all) $max }}
{{- fail (printf "watchedResources: %d configured, more than exporter.maxResources=%d (raise exporter.maxResources if the label cardinality is intended)" (len $all) $max) }}
{{- end }}
{{- if lt (include "rvsync-slo.seconds" .Values.exporter.probeInterval | float64) 0.1 }}
{{- fail (printf "exporter.probeInterval %s: must be at least 100ms" .Values.exporter.probeInterval) }}
{{- end }}
{{- include "rvsync-slo.checkMonitoring" . }}
{{- include "rvsync-slo.checkSLO" . }}
{{- $c := .Values.canary }}
{{- if $c.enabled }}
{{- $interval := include "rvsync-slo.seconds" $c.interval | float64 }}
{{- if lt $interval 0.1 }}
{{- fail (printf "canary.interval %s: must be at least 100ms" $c.interval) }}
{{- end }}
{{- if le (include "rvsync-slo.seconds" $c.deadline | float64) $interval }}
{{- fail (printf "canary.deadline %s: must be longer than canary.interval %s" $c.deadline $c.interval) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Whether the cluster serves an API kind, given as (list . "group/version"
"Kind"): "true" or "". helm install and upgrade know the cluster's APIs;
helm template knows those of --api-versions, where either form counts.
*/}}
{{- define "rvsync-slo.served" -}}
{{- $v := index . 0 }}{{ $gv := index . 1 }}{{ $kind := index . 2 }}
{{- if or ($v.Capabilities.APIVersions.Has (printf "%s/%s" $gv $kind)) ($v.Capabilities.APIVersions.Has $gv) }}true{{ end }}
{{- end }}

{{/*
Whether the chart renders an object of the Prometheus Operator's kind,
given as (list . "group/version" "Kind"): "true" or "". monitoring=operator
renders it (the cluster runs the operator; what GitOps tools that render
with `helm template` set, as they cannot ask the cluster), plain never,
auto when the cluster serves the kind (rvsync-slo.served).
*/}}
{{- define "rvsync-slo.operatorKind" -}}
{{- $v := index . 0 }}
{{- if eq $v.Values.monitoring "operator" }}true
{{- else if eq $v.Values.monitoring "auto" }}{{ include "rvsync-slo.served" . }}
{{- end }}
{{- end }}

{{/*
Refuses a rendering that would leave the exporter unscraped, its rules
loaded by nobody or its alerts unrouted without saying so: monitoring=auto
where the cluster (or `helm template` without --api-versions, which knows
no cluster) does not serve the ServiceMonitor, PrometheusRule or
AlertmanagerConfig that is enabled. Before, the chart dropped them quietly
and the rules went into a ConfigMap nobody mounts; `helm template` prints
no NOTES.
*/}}
{{- define "rvsync-slo.checkMonitoring" -}}
{{- if eq .Values.monitoring "auto" }}
{{- $v1 := list }}
{{- if and .Values.serviceMonitor.enabled (not (include "rvsync-slo.serviceMonitor" .)) }}{{ $v1 = append $v1 "ServiceMonitor" }}{{ end }}
{{- if and .Values.prometheusRule.enabled (not .Values.rulesConfigMap.enabled) (not (include "rvsync-slo.prometheusRule" .)) }}{{ $v1 = append $v1 "PrometheusRule" }}{{ end }}
{{- $amc := and .Values.alertmanagerConfig.enabled (not (include "rvsync-slo.alertmanagerConfig" .)) }}
{{- $missing := list }}
{{- $lost := list }}
{{- with $v1 }}
{{- $missing = append $missing (printf "monitoring.coreos.com/v1 %s" (join " and " .)) }}
{{- $lost = append $lost (ternary "no Prometheus would scrape the exporter or load its rules" (ternary "no Prometheus would scrape the exporter" "no Prometheus would load the SLO rules" (has "ServiceMonitor" .)) (eq (len .) 2)) }}
{{- end }}
{{- if $amc }}
{{- $missing = append $missing "monitoring.coreos.com/v1alpha1 AlertmanagerConfig" }}
{{- $lost = append $lost "no Alertmanager would route the alerts as alertmanagerConfig asks" }}
{{- end }}
{{- if $missing }}
{{- fail (printf "monitoring=auto: the cluster does not serve the Prometheus Operator's %s (helm template without --api-versions never does), so %s. Say which: --set monitoring=operator where the operator runs (what GitOps renderings with helm template, Argo CD, Flux or kustomize set), or --set monitoring=plain for a Prometheus without the operator (rules in ConfigMap %s-rules for rule_files; scrape Service %s yourself)%s" (join " and " $missing) (join ", and " $lost) (include "rvsync-slo.fullname" .) (include "rvsync-slo.fullname" .) (ternary "; or alertmanagerConfig.enabled=false and route the alerts with docs/alertmanager.yaml" "" $amc)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"true" when the chart creates the ServiceMonitor: enabled, and the cluster
serves the Prometheus Operator's kind. Without it, installing would fail.
*/}}
{{- define "rvsync-slo.serviceMonitor" -}}
{{- if and .Values.serviceMonitor.enabled (include "rvsync-slo.operatorKind" (list . "monitoring.coreos.com/v1" "ServiceMonitor")) }}true{{ end }}
{{- end }}

{{/*
"true" when the chart creates the PrometheusRule (enabled and served).
*/}}
{{- define "rvsync-slo.prometheusRule" -}}
{{- if and .Values.prometheusRule.enabled (include "rvsync-slo.operatorKind" (list . "monitoring.coreos.com/v1" "PrometheusRule")) }}true{{ end }}
{{- end }}

{{/*
"true" when the chart ships the rules ConfigMap: asked for, or in place of a
PrometheusRule the cluster cannot take.
*/}}
{{- define "rvsync-slo.rulesConfigMap" -}}
{{- if or .Values.rulesConfigMap.enabled (and .Values.prometheusRule.enabled (not (include "rvsync-slo.prometheusRule" .))) }}true{{ end }}
{{- end }}

{{/*
"true" when the chart creates the AlertmanagerConfig (enabled and served).
*/}}
{{- define "rvsync-slo.alertmanagerConfig" -}}
{{- if and .Values.alertmanagerConfig.enabled (include "rvsync-slo.operatorKind" (list . "monitoring.coreos.com/v1alpha1" "AlertmanagerConfig")) }}true{{ end }}
{{- end }}

{{/*
Labels by which a Prometheus or Alertmanager of the operator selects the
ServiceMonitor, PrometheusRule or AlertmanagerConfig, given as (list .
additionalLabels): `release: <releaseLabel>` (what kube-prometheus-stack
selects by), then the object's additional labels. NOTES shows them.
*/}}
{{- define "rvsync-slo.selectionLabels" -}}
{{- $v := index . 0 }}
{{- $labels := dict }}
{{- with $v.Values.releaseLabel }}{{ $_ := set $labels "release" . }}{{ end }}
{{- $labels = merge (deepCopy (index . 1)) $labels }}
{{- with $labels }}{{ toYaml . }}{{ end }}
{{- end }}

{{/*
Labels of those objects: the chart's labels plus rvsync-slo.selectionLabels.
*/}}
{{- define "rvsync-slo.selectedLabels" -}}
{{- include "rvsync-slo.labels" (index . 0) }}
{{- with include "rvsync-slo.selectionLabels" . }}
{{ . }}
{{- end }}
{{- end }}

{{/*
The job label of the exporter's targets as the ServiceMonitor scrapes them:
the value of the Service label serviceMonitor.jobLabel when set and present,
else the Service name (the Prometheus Operator's rule).
*/}}
{{- define "rvsync-slo.job" -}}
{{- $labels := include "rvsync-slo.labels" . | fromYaml }}
{{- with .Values.serviceMonitor.jobLabel }}{{ get $labels . | default (include "rvsync-slo.fullname" $) }}{{ else }}{{ include "rvsync-slo.fullname" . }}{{ end }}
{{- end }}

{{/*
Label matchers of the exporter's targets in `up`, for RvsyncExporterDown
and RvsyncExporterAbsent: slo.upSelector, else slo.selector, else the job
and namespace the chart's own ServiceMonitor gives its targets (so a
fullnameOverride or a second release cannot leave RvsyncExporterAbsent
firing forever or satisfied by another release), else any job named like
rvsync.
*/}}
{{- define "rvsync-slo.upSelector" -}}
{{- $s := .Values.slo }}
{{- if $s.upSelector }}{{ $s.upSelector }}
{{- else if $s.selector }}{{ $s.selector }}
{{- else if include "rvsync-slo.serviceMonitor" . }}{{ printf "job=%q, namespace=%q" (include "rvsync-slo.job" .) (include "rvsync-slo.namespace" .) }}
{{- else }}job=~".*rvsync.*"
{{- end }}
{{- end }}

{{/*
Labels added to every alert: slo.extraLabels.
*/}}
{{- define "rvsync-slo.alertLabels" -}}
{{- with .Values.slo.extraLabels }}{{ toYaml . }}{{ end }}
{{- end }}

{{/*
The alerts' namespace label (slo.Spec.AlertNamespace), the same on every
alert: the release namespace, a real namespace, so kube-prometheus-stack's
default route (group_by namespace) makes one notification of a fault that
hits every resource, and its inhibition (critical over warning of the same
namespace and alertname) lets a page mute its resource's tickets. With the
chart's AlertmanagerConfig it is that object's namespace: the operator
routes only alerts of its namespace.
*/}}
{{- define "rvsync-slo.alertNamespace" -}}
{{- if include "rvsync-slo.alertmanagerConfig" . }}{{ .Values.alertmanagerConfig.namespace | default (include "rvsync-slo.namespace" .) }}
{{- else }}{{ include "rvsync-slo.namespace" . }}
{{- end }}
{{- end }}

{{/*
Prefix of every alert's runbook_url and of the dashboards' runbook links:
slo.runbookURLPrefix, else docs/runbooks.md at this chart version's
release tag, so a runbook reads as the installed rules were written.
*/}}
{{- define "rvsync-slo.runbookURLPrefix" -}}
{{- .Values.slo.runbookURLPrefix | default (printf "https://github.com/rvsync-slo/rvsync-slo/blob/v%s/docs/runbooks.md#" .Chart.Version) }}
{{- end }}

{{/*
Prefix of the dashboards' UIDs (and of the alerts' dashboard_url paths):
the release's full name, which the chart's ClusterRole makes unique in a
cluster, so two releases in one Grafana never overwrite each other's
dashboards. Grafana UIDs hold at most 40 characters ("overview" and
"resource" are the longest suffixes): a longer name is shortened and made
unique by a hash.
*/}}
{{- define "rvsync-slo.dashboardUIDPrefix" -}}
{{- $name := include "rvsync-slo.fullname" . }}
{{- if le (len $name) 31 }}{{ $name }}-
{{- else }}{{ trunc 22 $name | trimSuffix "-" }}-{{ sha256sum $name | trunc 8 }}-
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
The exporter's config file (config.Config of exporter/config, read strictly by the exporter:
keys here must exist there).
*/}}
{{- define "rvsync-slo.config" -}}
{{- $e := .Values.exporter }}
listenAddress: {{ printf ":%v" $e.port | quote }}
probeInterval: {{ $e.probeInterval }}
logLevel: {{ $e.logLevel }}
logFormat: {{ $e.logFormat }}
maxResources: {{ $e.maxResources }}
resources:
  {{- toYaml .Values.watchedResources | nindent 2 }}
canary:
  enabled: {{ .Values.canary.enabled }}
  interval: {{ .Values.canary.interval }}
  deadline: {{ .Values.canary.deadline }}
  namespace: {{ include "rvsync-slo.namespace" . }}
  resources: {{ .Values.canary.resources | toJson }}
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
{{- if has $k (list "alertname" "severity" "slo" "resource" "long_window" "short_window" "namespace") }}
{{- fail (printf "slo.extraLabels: %q is set by the rules themselves; pick another label name" $k) }}
{{- end }}
{{- end }}
{{- range $k, $_ := .Values.slo.additionalRuleAnnotations }}
{{- if has $k (list "summary" "description" "runbook_url" "dashboard_url") }}
{{- fail (printf "slo.additionalRuleAnnotations: %q is set by the rules themselves; pick another annotation name" $k) }}
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

{{/*
The container's resources: .Values.resources, with memory sized from
.Values.watchedObjects when it is set (see values.yaml; the figures are
docs/benchmarks.md's 50,000- and 500,000-object runs).
*/}}
{{- define "rvsync-slo.resources" -}}
{{- $res := deepCopy (.Values.resources | default dict) -}}
{{- $n := int64 (.Values.watchedObjects | default 0) -}}
{{- if gt $n 0 -}}
{{- $limit := add 50 (div (add (mul 5 $n) 99999) 100000) -}}
{{- $request := add 38 (div (add (mul 4 $n) 99999) 100000) -}}
{{- $_ := set $res "limits" (set ($res.limits | default dict) "memory" (printf "%dMi" $limit)) -}}
{{- $_ = set $res "requests" (set ($res.requests | default dict) "memory" (printf "%dMi" $request)) -}}
{{- end -}}
{{- toYaml $res -}}
{{- end -}}

{{/*
Checks of the slo values that the schema cannot make: numbers given as
strings (helm's --set keeps a decimal such as 0.999 a string; the schema
takes one that parses) are in range, the selectors are PromQL label
matchers (an unquoted job=rvsync-slo renders and breaks every expression),
the budget period spans the burn-rate windows and fits the Prometheus
retention where slo.retention says it.
*/}}
{{- define "rvsync-slo.checkSLO" -}}
{{- $s := .Values.slo }}
{{- range $key := list "listLatency" "canaryDelivery" "cacheStaleness" "rvLag" "staleReads" }}
{{- $o := get $s $key }}
{{- $obj := $o.objective | float64 }}
{{- if not (and (gt $obj 0.0) (lt $obj 1.0)) }}
{{- fail (printf "slo.%s.objective %v: want a share in (0, 1), e.g. 0.99" $key $o.objective) }}
{{- end }}
{{- end }}
{{- range $key := list "cacheStaleness.thresholdSeconds" "rvLag.thresholdRevisions" "symptoms.relistsPerHour" "symptoms.queueDepthLimit" }}
{{- $parts := splitList "." $key }}
{{- $v := get (get $s (first $parts)) (last $parts) }}
{{- if not (gt ($v | float64) 0.0) }}
{{- fail (printf "slo.%s %v: want a positive number" $key $v) }}
{{- end }}
{{- end }}
{{- if lt ($s.symptoms.stalledAfterSeconds | float64) 120.0 }}
{{- fail (printf "slo.symptoms.stalledAfterSeconds %v: want at least 120 (two bookmark periods)" $s.symptoms.stalledAfterSeconds) }}
{{- end }}
{{- $matchers := `^\s*([a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*("([^"\\]|\\.)*"|'([^'\\]|\\.)*')\s*(,\s*|$))*$` }}
{{- range $key := list "selector" "upSelector" }}
{{- $sel := get $s $key }}
{{- if not (regexMatch $matchers $sel) }}
{{- fail (printf "slo.%s %q: want PromQL label matchers without braces, each value in double quotes, e.g. job=\"rvsync-slo\", namespace=\"monitoring\" (on the command line: --set-string 'slo.%s=job=\"rvsync-slo\"')" $key $sel $key) }}
{{- end }}
{{- end }}
{{- $budget := include "rvsync-slo.seconds" $s.budgetPeriod | float64 }}
{{- if lt $budget (mulf 3 86400) }}
{{- fail (printf "slo.budgetPeriod %s: want at least 3d, the longest burn-rate window" $s.budgetPeriod) }}
{{- end }}
{{- with $s.retention }}
{{- if gt $budget (include "rvsync-slo.seconds" . | float64) }}
{{- fail (printf "slo.budgetPeriod %s is longer than slo.retention %s: the error budget would average only %s of data. Set slo.budgetPeriod to %s or less (e.g. 7d), or raise the Prometheus retention (kube-prometheus-stack: prometheus.prometheusSpec.retention) and slo.retention with it" $s.budgetPeriod . . .) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Number of exporter pods: the shards, or the Deployment's replicas.
*/}}
{{- define "rvsync-slo.pods" -}}
{{- if .Values.sharding.enabled }}{{ .Values.sharding.shards }}{{ else }}{{ .Values.replicas }}{{ end }}
{{- end }}
