{{/* Names and labels shared by every template. */}}

{{- define "trawler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "trawler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "trawler.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "trawler.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "trawler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "trawler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: trawler
{{- end -}}

{{/* Selector labels of one service; call with (dict "root" $ "svc" "fetcher"). */}}
{{- define "trawler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "trawler.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .svc }}
{{- end -}}

{{- define "trawler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "trawler.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "trawler.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Stream-name fragment of the crawl prefix, as pkg/subjects derives it. */}}
{{- define "trawler.streamPrefix" -}}
{{- index .Values.config "prefix" | default "trawler" | replace "." "_" | upper -}}
{{- end -}}

{{- define "trawler.natsSecretName" -}}
{{- default (printf "%s-nats" (include "trawler.fullname" .)) .Values.nats.auth.existingSecret -}}
{{- end -}}

{{/*
The NATS URL list, without credentials: the URL is logged. The user and
password or the token reach the services as TRAWLER_NATS_USER,
TRAWLER_NATS_PASSWORD and TRAWLER_NATS_TOKEN from the Secret.
*/}}
{{- define "trawler.natsURL" -}}
{{- $scheme := ternary "tls" "nats" .Values.nats.tls.enabled -}}
{{- $urls := list -}}
{{- range .Values.nats.servers -}}
{{- $urls = append $urls (printf "%s://%s" $scheme .) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}

{{/* Is service .svc scaled by an HPA or KEDA (then replicas is not set)? */}}
{{- define "trawler.autoscaled" -}}
{{- $s := index .root.Values.services .svc -}}
{{- if or (and $s.autoscaling $s.autoscaling.enabled) (and $s.keda $s.keda.enabled) -}}true{{- end -}}
{{- end -}}

{{- define "trawler.redisSecretName" -}}
{{- default (printf "%s-redis" (include "trawler.fullname" .)) .Values.redis.auth.existingSecret -}}
{{- end -}}

{{/* Directories of private CAs to mount and trust (SSL_CERT_DIR), by volume name. */}}
{{- define "trawler.caDirs" -}}
{{- $dirs := dict -}}
{{- if and .Values.nats.tls.enabled .Values.nats.tls.caSecret -}}
{{- $_ := set $dirs "nats-ca" (dict "secret" .Values.nats.tls.caSecret "key" .Values.nats.tls.caKey) -}}
{{- end -}}
{{- if and .Values.redis.tls.enabled .Values.redis.tls.caSecret -}}
{{- $_ := set $dirs "redis-ca" (dict "secret" .Values.redis.tls.caSecret "key" .Values.redis.tls.caKey) -}}
{{- end -}}
{{- toJson $dirs -}}
{{- end -}}

{{/*
Name of a component's objects; call with (dict "root" $ "svc" "fetcher").
The release part is cut so that "<name>-frontier-metrics", the longest,
stays within the 63 characters of a Service name.
*/}}
{{- define "trawler.componentName" -}}
{{- printf "%s-%s" (include "trawler.fullname" .root | trunc 46 | trimSuffix "-") .svc -}}
{{- end -}}
