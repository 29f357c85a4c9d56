{{- define "allot.labels" -}}
app.kubernetes.io/name: allot
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "allot.serviceAccount" -}}
{{ .Values.serviceAccount.name | default .Release.Name }}
{{- end }}

{{- define "allot.secret" -}}
{{ .Values.existingSecret | default (printf "%s-env" .Release.Name) }}
{{- end }}

{{- define "allot.image" -}}
{{ printf "%s:%s" .Values.image.repository (toString .Values.image.tag) | quote }}
{{- end }}

{{/* The environment of every Allot container: the Secret, then the plain settings. */}}
{{- define "allot.env" -}}
envFrom:
  - secretRef: {name: {{ include "allot.secret" . }}}
env:
  - {name: ALLOT_AGENT, value: kubernetes}
  - {name: DEBUG, value: "0"}
  - {name: ALLOWED_HOSTS, value: {{ join "," .Values.allowedHosts | quote }}}
  {{- with .Values.portalUrl }}
  - {name: ALLOT_PORTAL_URL, value: {{ . | quote }}}
  {{- end }}
  {{- with .Values.sessionsOrigin }}
  - {name: ALLOT_SESSIONS_ORIGIN, value: {{ . | quote }}}
  {{- end }}
  {{- with .Values.oidc.issuer }}
  - {name: ALLOT_OIDC_ISSUER, value: {{ . | quote }}}
  {{- end }}
  {{- with .Values.oidc.clientId }}
  - {name: ALLOT_OIDC_CLIENT_ID, value: {{ . | quote }}}
  {{- end }}
  {{- range $name, $value := .Values.env }}
  - {name: {{ $name }}, value: {{ $value | toString | quote }}}
  {{- end }}
{{- end }}

{{/* A random value kept across upgrades: read back from the Secret the release made. */}}
{{- define "allot.kept" -}}
{{- $secret := lookup "v1" "Secret" .root.Release.Namespace (printf "%s-env" .root.Release.Name) -}}
{{- if and $secret (index $secret.data .key) -}}
{{ index $secret.data .key | b64dec }}
{{- else -}}
{{ randAlphaNum 64 }}
{{- end -}}
{{- end }}
