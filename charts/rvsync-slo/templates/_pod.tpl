{{/*
The exporter's pod template, shared by the Deployment and the sharded
StatefulSet so both run the very same pod.
*/}}
{{- define "rvsync-slo.podTemplate" -}}
metadata:
  labels:
    {{- include "rvsync-slo.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # roll the pods when the config changes
    checksum/config: {{ include "rvsync-slo.config" . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "rvsync-slo.serviceAccountName" . }}
  automountServiceAccountToken: true
  {{- with include "rvsync-slo.imagePullSecrets" . }}
  imagePullSecrets:
    {{- . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: exporter
      image: {{ include "rvsync-slo.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - --config=/etc/rvsync/config.yaml
        {{- range .Values.exporter.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      env:
        # the canary writes one ConfigMap per pod, named after it and owned
        # by it (the garbage collector removes it with the pod, also when
        # helm uninstall removed the RBAC the exporter would delete it with);
        # in the sharded StatefulSet the pod name's ordinal is the shard
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: POD_UID
          valueFrom:
            fieldRef:
              fieldPath: metadata.uid
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: metrics
          containerPort: {{ .Values.exporter.port }}
          protocol: TCP
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
          scheme: {{ include "rvsync-slo.scheme" . | upper }}
        periodSeconds: 10
        timeoutSeconds: 5
        failureThreshold: 6
      readinessProbe:
        httpGet:
          path: /readyz
          port: metrics
          scheme: {{ include "rvsync-slo.scheme" . | upper }}
        periodSeconds: 5
        timeoutSeconds: 5
        failureThreshold: 3
      resources:
        {{- include "rvsync-slo.resources" . | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/rvsync
          readOnly: true
        {{- if include "rvsync-slo.metricsCertDir" . }}
        - name: metrics-tls
          mountPath: {{ include "rvsync-slo.metricsCertDir" . }}
          readOnly: true
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "rvsync-slo.fullname" . }}-config
    {{- if include "rvsync-slo.metricsCertDir" . }}
    - name: metrics-tls
      secret:
        secretName: {{ .Values.metrics.certSecret }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
