package k8srender

import (
	"encoding/json"
	"strings"
	"text/template"
)

var funcs = template.FuncMap{
	// q quotes a string as YAML reads it (a JSON string is a YAML
	// double-quoted scalar).
	"q": func(s any) string {
		b, _ := json.Marshal(s)
		return string(b)
	},
	// dict makes a map of its key, value arguments (a sub-template's).
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	// indent indents every line of s by n spaces (a block scalar's body).
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
	},
}

// header is every manifest's metadata block; its argument is the object's
// name and component.
const header = `{{define "meta"}}metadata:
  name: {{.name}}
{{- if .d.Namespace}}
  namespace: {{.d.Namespace}}
{{- end}}
  labels:
    app.kubernetes.io/name: cloudinfer-bench
    app.kubernetes.io/instance: {{.d.Name}}
    app.kubernetes.io/component: {{.component}}
  annotations:
    cloudinfer.dev/plan: {{q .d.PlanHash}}
{{- end}}`

// podSecurity is the pods' security context: cloudinfer runs as the
// image's non-root user, with a read-only root file system.
const podSecurity = `{{define "podSecurity"}}      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
{{- end}}{{define "containerSecurity"}}        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            drop: ["ALL"]
{{- end}}`

var workersTmpl = template.Must(template.New("workers").Funcs(funcs).Parse(header + podSecurity + `# cloudinfer bench on {{.Shards}} workers, plan {{.PlanHash}} (rendered by cloudinfer k8s render).
# kubectl apply -f THIS; kubectl wait --for=condition=complete job/{{.Name}} --timeout=1h;
# then apply the merge Job (cloudinfer k8s render --merge) and read its log.
apiVersion: v1
kind: ConfigMap
{{template "meta" (dict "d" . "name" (print .Name "-plan") "component" "plan")}}
data:
  plan.json: |
{{indent 4 .Plan}}
{{- range $k, $v := .Files}}
  {{$k}}: |
{{indent 4 $v}}
{{- end}}
---
# Shard 0 is the start coordinator: the others reach it as {{.Name}}-0.{{.Name}}
# (the pod's hostname in this headless Service) and it releases them together.
apiVersion: v1
kind: Service
{{template "meta" (dict "d" . "name" .Name "component" "coordinator")}}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    batch.kubernetes.io/job-name: {{.Name}}
  ports:
  - name: start
    port: {{.Port}}
    targetPort: {{.Port}}
{{- if not .Claim}}
---
# The workers write their results here, and the merge Job reads them: it
# must be ReadWriteMany (NFS, CephFS, EFS, Filestore, Azure Files, or an
# object store mounted by its CSI driver).
apiVersion: v1
kind: PersistentVolumeClaim
{{template "meta" (dict "d" . "name" .Results "component" "results")}}
spec:
  accessModes: ["ReadWriteMany"]
{{- if .StorageClass}}
  storageClassName: {{.StorageClass}}
{{- end}}
  resources:
    requests:
      storage: {{q .Storage}}
{{- end}}
---
# {{.Shards}} workers, one per node; a worker that fails is not retried (its
# shard would start apart from the others): the Job fails, and the run
# is repeated whole.
apiVersion: batch/v1
kind: Job
{{template "meta" (dict "d" . "name" .Name "component" "worker")}}
spec:
  completionMode: Indexed
  completions: {{.Shards}}
  parallelism: {{.Shards}}
  backoffLimit: 0
  podReplacementPolicy: Failed
  template:
    metadata:
      labels:
        app.kubernetes.io/name: cloudinfer-bench
        app.kubernetes.io/instance: {{.Name}}
        app.kubernetes.io/component: worker
    spec:
      subdomain: {{.Name}}
      restartPolicy: Never
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                app.kubernetes.io/instance: {{.Name}}
                app.kubernetes.io/component: worker
{{template "podSecurity"}}
      containers:
      - name: bench
        image: {{q .Image}}
        args:
        - bench
        - --config=/plan/plan.json
        - --shards={{.Shards}}
        - --coordinator={{.Coord}}
        - --start-timeout={{.StartTimeout}}
        - --out=/results
        - --cloud
        - --quiet
        ports:
        - name: start
          containerPort: {{.Port}}
        envFrom:
        - secretRef:
            name: {{.Name}}-credentials
            optional: true
        resources:
          requests:
            cpu: {{q .CPU}}
            memory: {{q .Memory}}
          limits:
            cpu: {{q .CPU}}
            memory: {{q .Memory}}
{{template "containerSecurity"}}
        volumeMounts:
        - name: plan
          mountPath: /plan
          readOnly: true
        - name: results
          mountPath: /results
      volumes:
      - name: plan
        configMap:
          name: {{.Name}}-plan
      - name: results
        persistentVolumeClaim:
          claimName: {{.Results}}
`))

var mergeTmpl = template.Must(template.New("merge").Funcs(funcs).Parse(header + podSecurity + `# The merge of {{.Name}}'s {{.Shards}} shards (rendered by cloudinfer k8s render --merge):
# apply it once job/{{.Name}} is complete. It refuses a missing or repeated
# shard and shards of another plan; kubectl logs job/{{.Name}}-merge prints
# the merged report, and {{.Results}} holds merged.json.
apiVersion: batch/v1
kind: Job
{{template "meta" (dict "d" . "name" (print .Name "-merge") "component" "merge")}}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: cloudinfer-bench
        app.kubernetes.io/instance: {{.Name}}
        app.kubernetes.io/component: merge
    spec:
      restartPolicy: Never
{{template "podSecurity"}}
      initContainers:
      - name: merge
        image: {{q .Image}}
        args: [report, --merge, /results, --format=json, --out=/results/merged.json]
{{template "containerSecurity"}}
        volumeMounts:
        - name: results
          mountPath: /results
      containers:
      - name: report
        image: {{q .Image}}
        args: [report, /results/merged.json]
{{template "containerSecurity"}}
        volumeMounts:
        - name: results
          mountPath: /results
          readOnly: true
      volumes:
      - name: results
        persistentVolumeClaim:
          claimName: {{.Results}}
`))
