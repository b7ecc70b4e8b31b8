{{/*
plinth.namespace is the release's namespace, which must be plinth-system: plinth-controller's
leader-election Lease, its GitOps namespace and the namespaces plinth-apiserver protects from
provisioners are all plinth-system, so a release elsewhere would half work.
*/}}
{{- define "plinth.namespace" -}}
{{- if ne .Release.Namespace "plinth-system" -}}
{{- fail (printf "plinth must be installed in namespace plinth-system (helm install -n plinth-system), not %q: plinth-controller's Lease and GitOps namespace are fixed to it" .Release.Namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/*
plinth.image is the image reference of one component: image.registry/<repository>:<tag>, the
tag defaulting to the chart's appVersion. Call with (dict "root" $ "repository" "...").
*/}}
{{- define "plinth.image" -}}
{{- $tag := .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s/%s:%s" (trimSuffix "/" .root.Values.image.registry) .repository $tag -}}
{{- end -}}

{{/*
plinth.servingCert is the serving certificate of certificates.mode generate, as a dict with
PEM strings ca, cert and key. It is computed once per render and kept in .Values, so that the
Secret and every APIService's caBundle carry the same CA. An existing Secret
plinth-apiserver-serving is reused (lookup), so an upgrade does not change the certificate;
delete the Secret and upgrade to issue a new one.
*/}}
{{- define "plinth.servingCert" -}}
{{- if not (hasKey .Values "plinthGeneratedServingCert") -}}
{{- $ns := include "plinth.namespace" . -}}
{{- $existing := lookup "v1" "Secret" $ns "plinth-apiserver-serving" -}}
{{- $data := dict -}}
{{- if $existing -}}{{- $data = $existing.data | default dict -}}{{- end -}}
{{- if and (hasKey $data "ca.crt") (hasKey $data "tls.crt") (hasKey $data "tls.key") -}}
{{- $_ := set .Values "plinthGeneratedServingCert" (dict "ca" (index $data "ca.crt" | b64dec) "cert" (index $data "tls.crt" | b64dec) "key" (index $data "tls.key" | b64dec)) -}}
{{- else -}}
{{- $days := int .Values.certificates.generate.validityDays -}}
{{- $ca := genCA "plinth-apiserver-ca" $days -}}
{{- $host := printf "plinth-apiserver.%s.svc" $ns -}}
{{- $names := list "plinth-apiserver" (printf "plinth-apiserver.%s" $ns) $host (printf "%s.cluster.local" $host) -}}
{{- $cert := genSignedCert $host nil $names $days $ca -}}
{{- $_ := set .Values "plinthGeneratedServingCert" (dict "ca" $ca.Cert "cert" $cert.Cert "key" $cert.Key) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
plinth.etcdServers is plinth-apiserver's --etcd-servers: the members of the bundled StatefulSet
by their stable names, or etcd.external.endpoints.
*/}}
{{- define "plinth.etcdServers" -}}
{{- if eq .Values.etcd.mode "bundled" -}}
{{- $ns := include "plinth.namespace" . -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.etcd.replicas) -}}
{{- $urls = append $urls (printf "http://plinth-etcd-%d.plinth-etcd.%s.svc:2379" $i $ns) -}}
{{- end -}}
{{- join "," $urls -}}
{{- else -}}
{{- join "," .Values.etcd.external.endpoints -}}
{{- end -}}
{{- end -}}

{{/*
plinth.podSecurityContext and plinth.containerSecurityContext: every Plinth pod runs as
nonroot (65532, the images' user) on a read-only root filesystem without capabilities.
*/}}
{{- define "plinth.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "plinth.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end -}}
