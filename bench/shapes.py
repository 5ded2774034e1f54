#!/usr/bin/env python3
"""Generated Flux repositories in the layouts public repositories use, for the benchmarks.

    python3 bench/shapes.py --layout {ks-tree,operator,tenants} --scale K [--local-charts]
                            [--seed N] OUT_DIR

Why: `gen_repo.py` makes one shape, a catalog-driven flat app tier. Public repositories are
laid out otherwise, and a tool fast on one shape can be slow or wrong on another. Each layout
here imitates the shape of a kind of public repository (our own content, never their files):

- `ks-tree`: the per-app `ks.yaml` tree of the home-operations repositories. The entry
  `kubernetes/flux/cluster` holds the root Kustomization `cluster-apps` (reads
  `./kubernetes/apps`, `postBuild.substituteFrom` the `cluster-settings` ConfigMap beside it,
  and a patch that gives every child Kustomization the same `substituteFrom` and HelmRelease
  defaults). Each namespace is `kubernetes/apps/<ns>/{kustomization.yaml,namespace.yaml}` and
  one folder per app: `<app>/ks.yaml` (Flux Kustomization(s) with `components`,
  `postBuild.substitute` and `dependsOn`) and `<app>/app/` (a HelmRelease with `chartRef` to an
  OCIRepository). Shared components in `kubernetes/components/`: `common` (notification
  Provider and Alert), `volsync` (PVC, ReplicationSource/Destination, ExternalSecret, sized
  by `${VOLSYNC_CAPACITY:=5Gi}` and friends) and `gatus` (an endpoint ConfigMap with the nested
  default `${GATUS_SUBDOMAIN:=${APP}}`). flux-operator and a flux-instance HelmRelease whose
  `instance.sync.path` names the entry live in `flux-system`. Scale 1 is 25 namespaces, 85
  Flux Kustomizations, 68 HelmReleases and 412 files; scale K repeats the 24 namespaces
  other than flux-system K times (`media`, `media-2`, ...).
- `operator`: a Flux Operator fleet. `clusters/production/flux-instance.yaml` is a
  FluxInstance whose `spec.sync.path` is `clusters/production`, which also holds
  `infrastructure.yaml` (controllers, then configs) and `apps.yaml` (`./apps/production`, a
  Kustomize overlay of `apps/base/<app>`, with values patches). Scale 1 is 10 infrastructure
  controllers and 30 apps (two of three a HelmRelease from a HelmRepository, the rest plain
  manifests with a PVC): 3 Flux Kustomizations, 30 HelmReleases, 162 files; scale K has
  30×K apps, all in the one `apps` Kustomization.
- `tenants`: the Flux multi-tenancy layout. `clusters/production/` is `flux bootstrap`'s
  `flux-system/` (the sync only; the controllers' manifests are no part of the benchmark),
  `infrastructure.yaml` and `tenants.yaml`; `tenants/base/<team>/{rbac.yaml,sync.yaml,
  kustomization.yaml}` and `tenants/production/<team>-patch.yaml`. A tenant's Kustomization
  keeps its own ServiceAccount and `targetNamespace` but reads `./teams/<team>/production`
  from the flux-system GitRepository instead of a repository of its own, so the whole tree
  builds offline (cross-namespace source references must stay allowed). Scale 1 is 10 tenants
  of 5 apps each (the public example has one): 14 Flux Kustomizations, 11 HelmReleases,
  271 files; scale K has 10×K tenants.

`--local-charts` makes every HelmRelease use the small chart written to `charts/app`
(`spec.chart.spec.chart: ./charts/app` from GitRepository flux-system: a Deployment, a
Service and a PVC when `persistence.enabled`), so that Helm renders every release offline.
Without it the charts are remote and only a tool's non-Helm path can judge them.

OUT_DIR (absent or empty) becomes a git repository with two commits on `main`: `HEAD~1` the
base and `HEAD` a pull request's kind of change: one HelmRelease's values edited, one
resource edited, and one app removed from the kustomization that lists it (its folder
deleted too, but in `tenants`, where the tenant's staging still lists it), so its objects, a PersistentVolumeClaim among them, are pruned. Same arguments,
same bytes and same commit ids (fixed seed, author, committer and dates). Prints one line of
JSON: layout, scale, path, entry (the folder holding the cluster's Flux entry, relative to
OUT_DIR), kustomizations and helmreleases (the Flux objects written in HEAD's files; the
operator's generated root is not one of them) and files (HEAD's tracked files).
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

KS_API = "kustomize.toolkit.fluxcd.io/v1"
HR_API = "helm.toolkit.fluxcd.io/v2"
SRC_API = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
COMPONENT_API = "kustomize.config.k8s.io/v1alpha1"
DOMAIN = "example.net"
REPO_URL = "https://git.example.net/platform/cluster.git"

# ---------------------------------------------------------------------------------------------
# YAML out: block style, keys in the order written, strings quoted only when they must be.

_PLAIN = re.compile(r"^[A-Za-z0-9_$/.][A-Za-z0-9_./@${}=:+-]*$")
_AMBIGUOUS = re.compile(r"^(?:[-+]?[0-9][0-9_.:eE+-]*|true|false|yes|no|on|off|null|y|n|~)$", re.I)


def scalar(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(v)
    if v and _PLAIN.match(v) and not _AMBIGUOUS.match(v) and not v.endswith(":"):
        return v
    return json.dumps(v)


def _lines(v, ind):
    pad = " " * ind
    out = []
    if isinstance(v, dict):
        for k, val in v.items():
            key = scalar(k)
            if isinstance(val, dict) and val:
                out.append(f"{pad}{key}:")
                out += _lines(val, ind + 2)
            elif isinstance(val, list) and val:
                out.append(f"{pad}{key}:")
                out += _lines(val, ind + 2)
            elif isinstance(val, str) and "\n" in val:
                out.append(f"{pad}{key}: |-")
                out += [f"{pad}  {line}" if line else "" for line in val.split("\n")]
            elif isinstance(val, dict):
                out.append(f"{pad}{key}: {{}}")
            elif isinstance(val, list):
                out.append(f"{pad}{key}: []")
            else:
                out.append(f"{pad}{key}: {scalar(val)}")
    else:
        for item in v:
            if isinstance(item, (dict, list)) and item:
                sub = _lines(item, ind + 2)
                sub[0] = f"{pad}- {sub[0][ind + 2:]}"
                out += sub
            elif isinstance(item, str) and "\n" in item:
                out.append(f"{pad}- |-")
                out += [f"{pad}  {line}" if line else "" for line in item.split("\n")]
            else:
                out.append(f"{pad}- {scalar(item)}")
    return out


def dump(*docs):
    return "".join("---\n" + "\n".join(_lines(d, 0)) + "\n" for d in docs)


# ---------------------------------------------------------------------------------------------
# A tree in memory: path -> text, and the Flux objects of each manifest for the counts.


class Tree:
    def __init__(self):
        self.files = {}
        self.objects = {}
        self.patches = set()  # files of Kustomize patches: partial objects, not counted

    def put(self, path, *docs, patch=False):
        self.files[path] = dump(*docs)
        self.objects[path] = list(docs)
        if patch:
            self.patches.add(path)

    def text(self, path, text):
        self.files[path] = text
        self.objects[path] = []

    def remove_dir(self, prefix):
        for p in [p for p in self.files if p.startswith(prefix.rstrip("/") + "/")]:
            del self.files[p]
            del self.objects[p]

    def unlist(self, listing, entry, folder=None):
        """Takes `entry` out of the resources of kustomization `listing` (what a PR that retires
        an app does), and the app's `folder` with it when given."""
        k = self.objects[listing][0]
        k["resources"] = [r for r in k["resources"] if r != entry]
        self.put(listing, k)
        if folder:
            self.remove_dir(folder)

    def count(self, api_prefix, kind):
        return sum(1 for path, docs in self.objects.items() if path not in self.patches for d in docs
                   if d.get("kind") == kind and str(d.get("apiVersion", "")).startswith(api_prefix))


def meta(name, namespace=None, **extra):
    m = {"name": name}
    if namespace:
        m["namespace"] = namespace
    m.update(extra)
    return m


def kustomization(resources, **extra):
    k = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
    k.update({key: val for key, val in extra.items() if key != "components"})
    if extra.get("components"):
        k["components"] = extra["components"]
    k["resources"] = resources
    return k


def component(resources, components=()):
    c = {"apiVersion": COMPONENT_API, "kind": "Component"}
    if components:
        c["components"] = list(components)
    if resources:
        c["resources"] = resources
    return c


def flux_source_ref(namespace="flux-system"):
    ref = {"kind": "GitRepository", "name": "flux-system"}
    if namespace:
        ref["namespace"] = namespace
    return ref


def image_of(rng, name):
    major, minor, patch = rng.randint(0, 9), rng.randint(0, 30), rng.randint(0, 12)
    digest = "%064x" % rng.getrandbits(256)
    return {"repository": f"ghcr.io/example-org/{name}", "tag": f"{major}.{minor}.{patch}@sha256:{digest}"}


def chart_values(rng, name, port, persistence=None, env=None):
    values = {"image": image_of(rng, name), "replicas": 1}
    if env:
        values["env"] = env
    values["service"] = {"port": port}
    values["resources"] = {"requests": {"cpu": f"{rng.choice([10, 25, 50, 100])}m"},
                           "limits": {"memory": f"{rng.choice([128, 256, 512, 1024])}Mi"}}
    if persistence:
        values["persistence"] = persistence
    return values


def helmrelease(name, namespace, values, remote, local_charts, interval="1h"):
    """A HelmRelease of `remote` ({kind: OCIRepository|HelmRepository, name, chart, version}),
    or of the repository's own chart with --local-charts."""
    spec = {}
    if local_charts:
        spec["chart"] = {"spec": {"chart": "./charts/app", "sourceRef": flux_source_ref(),
                                  "reconcileStrategy": "Revision"}}
    elif remote["kind"] == "OCIRepository":
        spec["chartRef"] = {"kind": "OCIRepository", "name": remote["name"]}
    else:
        spec["chart"] = {"spec": {"chart": remote["chart"], "version": remote["version"],
                                  "sourceRef": {"kind": "HelmRepository", "name": remote["name"]}}}
    spec["interval"] = interval
    spec["values"] = values
    return {"apiVersion": HR_API, "kind": "HelmRelease", "metadata": meta(name, namespace), "spec": spec}


def deployment(name, namespace, rng, port, claim=None, replicas=1):
    container = {"name": "app", "image": "{repository}:{tag}".format(**image_of(rng, name)),
                 "ports": [{"name": "http", "containerPort": port}],
                 "resources": {"requests": {"cpu": "10m"}, "limits": {"memory": "128Mi"}}}
    pod = {"containers": [container]}
    if claim:
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        pod["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    labels = {"app.kubernetes.io/name": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, namespace, labels=labels),
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def service(name, namespace, port):
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, namespace),
            "spec": {"selector": {"app.kubernetes.io/name": name},
                     "ports": [{"name": "http", "port": port, "targetPort": "http"}]}}


def pvc(name, namespace, size, storage_class="standard"):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(name, namespace),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                     "storageClassName": storage_class}}


def configmap(name, namespace, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, namespace), "data": data}


def suffixed(names, k):
    """The k-th copy (from 0) of a list of names: `name`, then `name-2`, `name-3`, ..."""
    return [n if k == 0 else f"{n}-{k + 1}" for n in names]


# ---------------------------------------------------------------------------------------------
# The chart --local-charts uses.

CHART = {
    "charts/app/Chart.yaml": """apiVersion: v2
name: app
description: One workload of the benchmark repositories - a Deployment, its Service and, when asked, its volume.
type: application
version: 1.0.0
appVersion: "1.0.0"
""",
    "charts/app/values.yaml": """image:
  repository: ghcr.io/example-org/app
  tag: "1.0.0"
replicas: 1
env: {}
service:
  port: 8080
resources: {}
persistence:
  enabled: false
  size: 1Gi
  storageClass: ""
  # A claim made elsewhere (the volsync component) to mount instead of one of the chart's.
  existingClaim: ""
""",
    "charts/app/templates/_helpers.tpl": """{{- define "app.labels" -}}
app.kubernetes.io/name: {{ .Release.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}
{{- define "app.claim" -}}
{{- .Values.persistence.existingClaim | default (printf "%s-data" .Release.Name) -}}
{{- end }}
""",
    "charts/app/templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "app.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        {{- include "app.labels" . | nindent 8 }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          {{- with .Values.env }}
          env:
            {{- range $k, $v := . }}
            - name: {{ $k }}
              value: {{ $v | quote }}
            {{- end }}
          {{- end }}
          ports:
            - name: http
              containerPort: {{ .Values.service.port }}
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- if or .Values.persistence.enabled .Values.persistence.existingClaim }}
          volumeMounts:
            - name: data
              mountPath: /data
          {{- end }}
      {{- if or .Values.persistence.enabled .Values.persistence.existingClaim }}
      volumes:
        - name: data
          persistentVolumeClaim:
            claimName: {{ include "app.claim" . }}
      {{- end }}
""",
    "charts/app/templates/service.yaml": """apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "app.labels" . | nindent 4 }}
spec:
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
  ports:
    - name: http
      port: {{ .Values.service.port }}
      targetPort: http
""",
    "charts/app/templates/pvc.yaml": """{{- if and .Values.persistence.enabled (not .Values.persistence.existingClaim) }}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ include "app.claim" . }}
  labels:
    {{- include "app.labels" . | nindent 4 }}
spec:
  accessModes:
    - ReadWriteOnce
  resources:
    requests:
      storage: {{ .Values.persistence.size }}
  {{- with .Values.persistence.storageClass }}
  storageClassName: {{ . }}
  {{- end }}
{{- end }}
""",
}


def write_chart(tree):
    for path, text in CHART.items():
        tree.text(path, text)


# ---------------------------------------------------------------------------------------------
# ks-tree

# Namespace -> apps: (name, traits, dependsOn within the namespace). Traits: v volsync
# component, g gatus component, p the chart's own volume, e an ExternalSecret, f a
# configMapGenerator file, n plain manifests instead of a HelmRelease, c:<x> a second
# Kustomization `<app>-<x>` of plain manifests that depends on the app.
KS_TREE = {
    "flux-system": [("flux-operator", "", []), ("flux-instance", "", ["flux-operator"])],
    "cert-manager": [("cert-manager", "c:issuers", [])],
    "external-secrets": [("external-secrets", "c:stores", []), ("onepassword-connect", "e", ["external-secrets"])],
    "kube-system": [("cilium", "c:config", []), ("coredns", "", []), ("metrics-server", "", []),
                    ("reloader", "", []), ("spegel", "", []), ("device-plugin", "", [])],
    "storage": [("volsync", "", ["snapshot-controller"]), ("snapshot-controller", "", []),
                ("openebs", "", []), ("rook-ceph", "c:cluster", [])],
    "network": [("envoy-gateway", "c:gateways", []), ("external-dns", "e", []), ("tunnel", "n", []),
                ("split-dns", "", []), ("echo", "g", [])],
    "observability": [("prometheus-stack", "f", []), ("grafana", "vge", []), ("loki", "p", []),
                      ("alloy", "f", ["loki"]), ("gatus", "vg", []), ("blackbox-exporter", "", [])],
    "database": [("cloudnative-pg", "c:cluster", []), ("dragonfly-operator", "", []), ("pgadmin", "vg", [])],
    "default": [("wiki", "vgf", []), ("bookmarks", "vg", []), ("notes", "vge", []), ("paste", "g", []),
                ("photos", "vgp", []), ("recipes", "vg", []), ("feeds", "vgf", []), ("dashboard", "gf", [])],
    "media": [("stream-server", "vg", []), ("music", "vg", []), ("audiobooks", "vg", []),
              ("subtitles", "v", []), ("requests", "vg", []), ("indexer", "vge", [])],
    "downloads": [("torrent", "vg", []), ("usenet", "vge", []), ("tv-manager", "vg", ["torrent"]),
                  ("movie-manager", "vg", ["torrent"])],
    "home-automation": [("home-hub", "vgf", []), ("zigbee-bridge", "v", ["mqtt"]), ("mqtt", "v", []),
                        ("zwave-bridge", "v", []), ("esphome", "vg", []), ("node-red", "vg", ["mqtt"])],
    "security": [("auth-server", "ge", []), ("ldap", "v", []), ("vault-proxy", "e", [])],
    "selfhosted": [("git-server", "vgf", []), ("ci-runner", "e", ["git-server"]), ("code-server", "vg", []),
                   ("registry-cache", "p", [])],
    "system-upgrade": [("upgrade-controller", "c:plans", [])],
    "actions-runner-system": [("runner-controller", "c:runners", [])],
    "ai": [("llm-server", "vp", []), ("chat-ui", "vg", ["llm-server"])],
    "dev": [("devbox", "v", []), ("docs-site", "ng", [])],
    "backup": [("backup-server", "v", []), ("object-store", "p", [])],
    "games": [("game-server", "v", [])],
    "mail": [("smtp-relay", "e", []), ("mail-archive", "vg", ["smtp-relay"])],
    "renovate": [("renovate-operator", "e", [])],
    "tools": [("it-tools", "ng", []), ("whiteboard", "ng", []), ("converter", "n", [])],
    "printing": [("print-server", "v", [])],
    "vpn": [("vpn-gateway", "e", [])],
}
CAPACITIES = ["1Gi", "2Gi", "5Gi", "10Gi", "20Gi", "50Gi"]


def ks_tree(tree, rng, scale, local_charts):
    apps_dir = "kubernetes/apps"
    settings = configmap("cluster-settings", "flux-system", {
        "CLUSTER_NAME": "main", "CLUSTER_DOMAIN": DOMAIN, "TIMEZONE": "Etc/UTC",
        "LB_POOL_CIDR": "10.40.0.0/24"})
    child_defaults = dump({
        "apiVersion": KS_API, "kind": "Kustomization", "metadata": {"name": "_"},
        "spec": {
            "postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "cluster-settings"}]},
            "patches": [{"patch": dump({
                "apiVersion": HR_API, "kind": "HelmRelease", "metadata": {"name": "_"},
                "spec": {"install": {"crds": "CreateReplace", "remediation": {"retries": -1}},
                         "rollback": {"cleanupOnFail": True},
                         "upgrade": {"cleanupOnFail": True, "crds": "CreateReplace",
                                     "remediation": {"remediateLastFailure": True, "retries": 3}}},
            }).removeprefix("---\n").rstrip("\n"),
                "target": {"group": "helm.toolkit.fluxcd.io", "kind": "HelmRelease"}}],
        },
    }).removeprefix("---\n").rstrip("\n")
    root = {"apiVersion": KS_API, "kind": "Kustomization", "metadata": meta("cluster-apps", "flux-system"),
            "spec": {"interval": "1h", "path": "./kubernetes/apps", "prune": True,
                     "sourceRef": flux_source_ref(), "wait": False,
                     "postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "cluster-settings"}]},
                     "patches": [{"patch": child_defaults,
                                  "target": {"group": "kustomize.toolkit.fluxcd.io", "kind": "Kustomization"}}]}}
    tree.put("kubernetes/flux/cluster/ks.yaml", root)
    tree.put("kubernetes/flux/cluster/cluster-settings.yaml", settings)

    # Shared components.
    # A child Kustomization reads substituteFrom in its own namespace: each namespace gets a
    # copy of the settings, filled in by cluster-apps' substitution from flux-system's.
    # flux-system has the original in the entry and goes without.
    tree.put("kubernetes/components/common/kustomization.yaml", component([], ["./alerts"]))
    tree.put("kubernetes/components/cluster-settings/kustomization.yaml", component(["./cluster-settings.yaml"]))
    tree.put("kubernetes/components/cluster-settings/cluster-settings.yaml", configmap(
        "cluster-settings", None, {k: "${%s}" % k for k in settings["data"]}))
    tree.put("kubernetes/components/common/alerts/kustomization.yaml", component(["./provider.yaml", "./alert.yaml"]))
    tree.put("kubernetes/components/common/alerts/provider.yaml", {
        "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
        "metadata": meta("alert-manager"),
        "spec": {"type": "alertmanager",
                 "address": "http://alertmanager.observability.svc.cluster.local:9093/api/v2/alerts/"}})
    tree.put("kubernetes/components/common/alerts/alert.yaml", {
        "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert", "metadata": meta("alert-manager"),
        "spec": {"providerRef": {"name": "alert-manager"}, "eventSeverity": "error",
                 "eventSources": [{"kind": "HelmRelease", "name": "*"}, {"kind": "Kustomization", "name": "*"}],
                 "exclusionList": ["error.*lookup github\\.com", "waiting.*socket"], "suspend": False}})
    vs = "kubernetes/components/volsync"
    tree.put(f"{vs}/kustomization.yaml", component(["./externalsecret.yaml", "./pvc.yaml",
                                                    "./replicationdestination.yaml", "./replicationsource.yaml"]))
    tree.put(f"{vs}/externalsecret.yaml", {
        "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": meta("${APP}-volsync"),
        "spec": {"secretStoreRef": {"kind": "ClusterSecretStore", "name": "onepassword"},
                 "target": {"name": "${APP}-volsync-secret", "template": {"data": {
                     "RESTIC_REPOSITORY": "${VOLSYNC_REPOSITORY:=s3:https://s3.${CLUSTER_DOMAIN}/volsync}/${APP}",
                     "RESTIC_PASSWORD": "{{ .RESTIC_PASSWORD }}"}}},
                 "dataFrom": [{"extract": {"key": "volsync-template"}}]}})
    tree.put(f"{vs}/pvc.yaml", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("${APP}"),
        "spec": {"accessModes": ["${VOLSYNC_ACCESSMODES:=ReadWriteOnce}"],
                 "dataSourceRef": {"apiGroup": "volsync.backube", "kind": "ReplicationDestination",
                                   "name": "${APP}-dst"},
                 "resources": {"requests": {"storage": "${VOLSYNC_CAPACITY:=5Gi}"}},
                 "storageClassName": "${VOLSYNC_STORAGECLASS:=ceph-block}"}})
    mover = {"runAsUser": "${VOLSYNC_PUID:=1000}", "runAsGroup": "${VOLSYNC_PGID:=1000}",
             "fsGroup": "${VOLSYNC_PGID:=1000}"}
    tree.put(f"{vs}/replicationdestination.yaml", {
        "apiVersion": "volsync.backube/v1alpha1", "kind": "ReplicationDestination", "metadata": meta("${APP}-dst"),
        "spec": {"trigger": {"manual": "restore-once"},
                 "restic": {"repository": "${APP}-volsync-secret", "copyMethod": "Snapshot",
                            "volumeSnapshotClassName": "${VOLSYNC_SNAPSHOTCLASS:=csi-ceph-blockpool}",
                            "cacheStorageClassName": "${VOLSYNC_CACHE_STORAGECLASS:=openebs-hostpath}",
                            "cacheCapacity": "${VOLSYNC_CACHE_CAPACITY:=${VOLSYNC_CAPACITY:=5Gi}}",
                            "storageClassName": "${VOLSYNC_STORAGECLASS:=ceph-block}",
                            "accessModes": ["${VOLSYNC_ACCESSMODES:=ReadWriteOnce}"],
                            "capacity": "${VOLSYNC_CAPACITY:=5Gi}", "moverSecurityContext": mover}}})
    tree.put(f"{vs}/replicationsource.yaml", {
        "apiVersion": "volsync.backube/v1alpha1", "kind": "ReplicationSource", "metadata": meta("${APP}"),
        "spec": {"sourcePVC": "${APP}", "trigger": {"schedule": "${VOLSYNC_SCHEDULE:=0 * * * *}"},
                 "restic": {"copyMethod": "${VOLSYNC_COPYMETHOD:=Snapshot}", "pruneIntervalDays": 14,
                            "repository": "${APP}-volsync-secret",
                            "volumeSnapshotClassName": "${VOLSYNC_SNAPSHOTCLASS:=csi-ceph-blockpool}",
                            "cacheCapacity": "${VOLSYNC_CACHE_CAPACITY:=${VOLSYNC_CAPACITY:=5Gi}}",
                            "storageClassName": "${VOLSYNC_STORAGECLASS:=ceph-block}",
                            "moverSecurityContext": mover,
                            "retain": {"hourly": 24, "daily": 7, "weekly": 4}}}})
    tree.put("kubernetes/components/gatus/kustomization.yaml", component(["./config.yaml"]))
    tree.put("kubernetes/components/gatus/config.yaml", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": meta("${APP}-gatus-ep", labels={"gatus.io/enabled": "true"}),
        "data": {"config.yaml": "\n".join([
            "endpoints:",
            "  - name: \"${APP}\"",
            "    group: ${GATUS_GROUP:=apps}",
            "    url: \"https://${GATUS_SUBDOMAIN:=${APP}}.${CLUSTER_DOMAIN}${GATUS_PATH:=/}\"",
            "    interval: 1m",
            "    conditions:",
            "      - \"[STATUS] == ${GATUS_STATUS:=200}\""])}})
    if local_charts:
        write_chart(tree)

    names = {}  # (namespace, app) -> traits, for the change
    top = []
    copies = [("flux-system", 0)] + [(ns, k) for k in range(scale) for ns in KS_TREE if ns != "flux-system"]
    for base_ns, k in copies:
        ns = suffixed([base_ns], k)[0]
        sfx = "" if k == 0 else f"-{k + 1}"
        top.append(f"./{ns}")
        listed = ["./namespace.yaml"]
        tree.put(f"{apps_dir}/{ns}/namespace.yaml", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": "_", "annotations": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}})
        for app, traits, deps in KS_TREE[base_ns]:
            names[(ns, app)] = traits
            listed.append(f"./{app}/ks.yaml")
            ks_app(tree, rng, apps_dir, ns, sfx, app, traits, deps, local_charts)
        tree.put(f"{apps_dir}/{ns}/kustomization.yaml",
                 kustomization(listed, namespace=ns, components=["../../components/common"] + (
                     [] if ns == "flux-system" else ["../../components/cluster-settings"])))
    tree.put(f"{apps_dir}/kustomization.yaml", kustomization(top))
    return "kubernetes/flux/cluster", names


def ks_app(tree, rng, apps_dir, ns, sfx, app, traits, deps, local_charts):
    folder = f"{apps_dir}/{ns}/{app}"
    port = rng.choice([80, 3000, 8080, 8000, 9000, 5000])
    components, substitute = [], {"APP": app}
    if "v" in traits:
        components.append("../../../../components/volsync")
        if rng.random() < 0.8:
            substitute["VOLSYNC_CAPACITY"] = rng.choice(CAPACITIES)
        if rng.random() < 0.2:
            substitute["VOLSYNC_PUID"] = "568"
            substitute["VOLSYNC_PGID"] = "568"
    if "g" in traits:
        components.append("../../../../components/gatus")
        if rng.random() < 0.3:
            substitute["GATUS_SUBDOMAIN"] = app.split("-")[0]
    depends = [{"name": d} for d in deps]
    if "v" in traits:
        depends.append({"name": "volsync", "namespace": f"storage{sfx}"})
    if "e" in traits or "v" in traits:
        depends.append({"name": "external-secrets-stores", "namespace": f"external-secrets{sfx}"})
    if ns == "flux-system" or ns.startswith("external-secrets"):
        depends = [d for d in depends if d.get("namespace", "").split("-")[0] != "external"]
    spec = {}
    if components:
        spec["components"] = components
    if depends:
        spec["dependsOn"] = depends
    spec.update({"interval": "1h", "path": f"./{folder}/app",
                 "postBuild": {"substitute": substitute}, "prune": True,
                 "sourceRef": flux_source_ref(), "targetNamespace": ns, "timeout": "5m", "wait": False})
    docs = [{"apiVersion": KS_API, "kind": "Kustomization", "metadata": meta(app), "spec": spec}]
    if "c:" in traits:
        extra = traits.split("c:")[1]
        docs.append({"apiVersion": KS_API, "kind": "Kustomization", "metadata": meta(f"{app}-{extra}"),
                     "spec": {"dependsOn": [{"name": app}], "interval": "1h", "path": f"./{folder}/{extra}",
                              "postBuild": {"substitute": {"APP": app}}, "prune": True,
                              "sourceRef": flux_source_ref(), "targetNamespace": ns, "wait": False}})
        tree.put(f"{folder}/{extra}/kustomization.yaml", kustomization([f"./{extra}.yaml"]))
        tree.put(f"{folder}/{extra}/{extra}.yaml", configmap(f"{app}-{extra}", None, {
            "cluster": "${CLUSTER_NAME}", "domain": "${CLUSTER_DOMAIN}",
            "pool": "${LB_POOL_CIDR}", "generation": "1"}))
    tree.put(f"{folder}/ks.yaml", *docs)

    resources = []
    if "n" in traits:
        tree.put(f"{folder}/app/deployment.yaml", deployment(app, None, rng, port))
        tree.put(f"{folder}/app/service.yaml", service(app, None, port))
        resources += ["./deployment.yaml", "./service.yaml"]
    else:
        persistence = None
        if "v" in traits:
            persistence = {"existingClaim": app}
        elif "p" in traits:
            persistence = {"enabled": True, "size": rng.choice(CAPACITIES), "storageClass": "openebs-hostpath"}
        env = {"TZ": "${TIMEZONE}", "PORT": str(port)}
        if "e" in traits:
            env["SECRET_FILE"] = f"/secrets/{app}"
        values = chart_values(rng, app, port, persistence, env)
        if app == "flux-instance":
            values["instance"] = {
                "distribution": {"version": "2.x", "registry": "ghcr.io/fluxcd"},
                "components": ["source-controller", "kustomize-controller", "helm-controller",
                               "notification-controller"],
                "cluster": {"networkPolicy": False},
                "sync": {"kind": "GitRepository", "url": REPO_URL, "ref": "refs/heads/main",
                         "path": "kubernetes/flux/cluster", "interval": "1h"}}
        remote = {"kind": "OCIRepository", "name": app}
        tree.put(f"{folder}/app/helmrelease.yaml", helmrelease(app, None, values, remote, local_charts))
        resources.append("./helmrelease.yaml")
        if not local_charts:
            chart = "flux-operator" if app == "flux-operator" else \
                "flux-instance" if app == "flux-instance" else "app-template"
            tree.put(f"{folder}/app/ocirepository.yaml", {
                "apiVersion": SRC_API, "kind": "OCIRepository", "metadata": meta(app),
                "spec": {"interval": "15m",
                         "layerSelector": {"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                                           "operation": "copy"},
                         "ref": {"tag": f"4.{rng.randint(0, 4)}.{rng.randint(0, 9)}"},
                         "url": f"oci://ghcr.io/example-org/charts/{chart}"}})
            resources.append("./ocirepository.yaml")
    if "e" in traits:
        tree.put(f"{folder}/app/externalsecret.yaml", {
            "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": meta(app),
            "spec": {"secretStoreRef": {"kind": "ClusterSecretStore", "name": "onepassword"},
                     "target": {"name": f"{app}-secret"}, "dataFrom": [{"extract": {"key": app}}]}})
        resources.append("./externalsecret.yaml")
    extra = {}
    if "f" in traits:
        tree.text(f"{folder}/app/resources/config.yaml",
                  f"# {app} settings\nlisten: 0.0.0.0:{port}\nlog_level: info\ncluster: ${{CLUSTER_NAME}}\n")
        extra = {"configMapGenerator": [{"name": f"{app}-configmap", "files": ["./resources/config.yaml"]}],
                 "generatorOptions": {"disableNameSuffixHash": True}}
    tree.put(f"{folder}/app/kustomization.yaml", kustomization(resources, **extra))


def ks_tree_change(tree, names):
    """A pull request: bump one image, edit one resource, remove one app with a volume."""
    edited = "kubernetes/apps/default/wiki/app/helmrelease.yaml"
    hr = tree.objects[edited][0]
    hr["spec"]["values"]["image"]["tag"] = "9.9.9@sha256:" + "ab" * 32
    hr["spec"]["values"]["replicas"] = 2
    tree.put(edited, hr)
    resource = "kubernetes/apps/kube-system/cilium/config/config.yaml"
    cm = tree.objects[resource][0]
    cm["data"]["generation"] = "2"
    tree.put(resource, cm)
    tree.unlist("kubernetes/apps/media/kustomization.yaml", "./subtitles/ks.yaml", "kubernetes/apps/media/subtitles")
    return "bump wiki and scale it to two replicas, edit the cilium config, retire subtitles"


# ---------------------------------------------------------------------------------------------
# operator

INFRA = [("cert-manager", "jetstack"), ("ingress-nginx", "ingress-nginx"), ("external-dns", "external-dns"),
         ("metrics-server", "metrics-server"), ("kyverno", "kyverno"), ("kube-prometheus-stack", "prometheus"),
         ("loki", "grafana"), ("velero", "vmware-tanzu"), ("csi-driver-nfs", "csi-driver-nfs"),
         ("external-secrets", "external-secrets")]
OPERATOR_APPS = ["podinfo", "storefront", "checkout", "catalog", "search", "cart", "payments", "shipping",
                 "inventory", "reviews", "recommend", "accounts", "notify", "gateway", "admin", "reports",
                 "ledger", "billing", "media", "uploads", "chat", "feeds", "analytics", "audit", "mailer",
                 "scheduler", "geo", "pricing", "loyalty", "support"]


def operator(tree, rng, scale, local_charts):
    cluster = "clusters/production"
    tree.put(f"{cluster}/flux-instance.yaml", {
        "apiVersion": "fluxcd.controlplane.io/v1", "kind": "FluxInstance", "metadata": meta("flux", "flux-system",
            annotations={"fluxcd.controlplane.io/reconcileEvery": "1h"}),
        "spec": {"distribution": {"version": "2.x", "registry": "ghcr.io/fluxcd"},
                 "components": ["source-controller", "kustomize-controller", "helm-controller",
                                "notification-controller"],
                 "cluster": {"type": "kubernetes", "size": "medium", "multitenant": False,
                             "networkPolicy": True, "domain": "cluster.local"},
                 "sync": {"kind": "GitRepository", "url": REPO_URL, "ref": "refs/heads/main",
                          "path": cluster, "interval": "5m"}}})

    def ks(name, path, deps=(), **more):
        spec = {}
        if deps:
            spec["dependsOn"] = [{"name": d} for d in deps]
        spec.update({"interval": "1h", "retryInterval": "1m", "timeout": "5m", "sourceRef": flux_source_ref(None),
                     "path": path, "prune": True, "wait": True})
        spec.update(more)
        return {"apiVersion": KS_API, "kind": "Kustomization", "metadata": meta(name, "flux-system"), "spec": spec}

    tree.put(f"{cluster}/infrastructure.yaml",
             ks("infra-controllers", "./infrastructure/controllers"),
             ks("infra-configs", "./infrastructure/configs", ["infra-controllers"]))
    tree.put(f"{cluster}/apps.yaml",
             ks("apps", "./apps/production", ["infra-configs"], wait=False,
                postBuild={"substitute": {"CLUSTER_NAME": "production", "CLUSTER_DOMAIN": DOMAIN}}))
    if local_charts:
        write_chart(tree)

    listed = []
    for name, repo in INFRA:
        listed.append(f"{name}.yaml")
        remote = {"kind": "HelmRepository", "name": repo, "chart": name, "version": f">={rng.randint(1, 9)}.0.0"}
        values = chart_values(rng, name, 8080, env={"CLUSTER": "production"})
        tree.put(f"infrastructure/controllers/{name}.yaml",
                 {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name)},
                 {"apiVersion": SRC_API, "kind": "HelmRepository", "metadata": meta(repo, name),
                  "spec": {"interval": "24h", "url": f"https://charts.example.org/{repo}"}},
                 helmrelease(name, name, values, remote, local_charts, interval="30m"))
    tree.put("infrastructure/controllers/kustomization.yaml", kustomization(listed))
    tree.put("infrastructure/configs/cluster-issuers.yaml", *[
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": meta(n),
         "spec": {"acme": {"email": f"ops@{DOMAIN}", "server": s, "privateKeySecretRef": {"name": n},
                           "solvers": [{"http01": {"ingress": {"ingressClassName": "nginx"}}}]}}}
        for n, s in [("letsencrypt", "https://acme-v02.api.example.org/directory"),
                     ("letsencrypt-staging", "https://acme-staging-v02.api.example.org/directory")]])
    tree.put("infrastructure/configs/storage-classes.yaml", *[
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta(n),
         "provisioner": "nfs.csi.k8s.io", "parameters": {"server": "nfs.internal", "share": f"/export/{n}"},
         "reclaimPolicy": policy, "volumeBindingMode": "Immediate"}
        for n, policy in [("nfs-retain", "Retain"), ("nfs-delete", "Delete")]])
    tree.put("infrastructure/configs/kustomization.yaml",
             kustomization(["cluster-issuers.yaml", "storage-classes.yaml"]))

    overlay, patches, apps = [], [], []
    for k in range(scale):
        for i, app in enumerate(suffixed(OPERATOR_APPS, k)):
            base = f"apps/base/{app}"
            overlay.append(f"../base/{app}")
            helm = i % 3 != 2
            apps.append((app, helm))
            files = ["namespace.yaml"]
            tree.put(f"{base}/namespace.yaml", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": meta(app, labels={"toolkit.fluxcd.io/tenant": "apps"})})
            port = rng.choice([8080, 9898, 3000])
            if helm:
                remote = {"kind": "HelmRepository", "name": app, "chart": app, "version": f"{rng.randint(1, 6)}.x"}
                values = chart_values(rng, app, port, env={"ENV": "base"},
                                      persistence={"enabled": i % 3 == 0, "size": "2Gi"})
                values["ingress"] = {"host": f"{app}.${{CLUSTER_DOMAIN}}"}
                tree.put(f"{base}/repository.yaml", {
                    "apiVersion": SRC_API, "kind": "HelmRepository", "metadata": meta(app, app),
                    "spec": {"interval": "1h", "type": "oci", "url": f"oci://ghcr.io/example-org/charts"}})
                tree.put(f"{base}/release.yaml", helmrelease(app, app, values, remote, local_charts, interval="30m"))
                files += ["repository.yaml", "release.yaml"]
                if i % 2 == 0:
                    patches.append({"path": f"{app}-values.yaml",
                                    "target": {"kind": "HelmRelease", "name": app, "namespace": app}})
                    tree.put(f"apps/production/{app}-values.yaml", {
                        "apiVersion": HR_API, "kind": "HelmRelease", "metadata": meta(app, app),
                        "spec": {"values": {"replicas": 2, "env": {"ENV": "production"},
                                            "ingress": {"host": f"{app}.${{CLUSTER_NAME}}.${{CLUSTER_DOMAIN}}"}}}},
                             patch=True)
            else:
                tree.put(f"{base}/deployment.yaml", deployment(app, app, rng, port, claim=f"{app}-data"))
                tree.put(f"{base}/service.yaml", service(app, app, port))
                tree.put(f"{base}/pvc.yaml", pvc(f"{app}-data", app, rng.choice(CAPACITIES), "nfs-retain"))
                tree.put(f"{base}/configmap.yaml", configmap(f"{app}-config", app, {
                    "CLUSTER": "${CLUSTER_NAME}", "LOG_LEVEL": "info"}))
                files += ["deployment.yaml", "service.yaml", "pvc.yaml", "configmap.yaml"]
            tree.put(f"{base}/kustomization.yaml", kustomization(files))
    tree.put("apps/production/kustomization.yaml", kustomization(overlay, patches=patches))
    return cluster, apps


def operator_change(tree, apps):
    values = "apps/production/podinfo-values.yaml"
    hr = tree.objects[values][0]
    hr["spec"]["values"]["replicas"] = 3
    tree.put(values, hr, patch=True)
    edited = "apps/base/checkout/deployment.yaml"
    dep = tree.objects[edited][0]
    dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "256Mi"
    tree.put(edited, dep)
    tree.unlist("apps/production/kustomization.yaml", "../base/billing", "apps/base/billing")
    return "podinfo to three replicas in production, more memory for checkout, retire billing"


# ---------------------------------------------------------------------------------------------
# tenants

TEAMS = ["dev-team", "payments", "search", "mobile", "data", "platform", "growth", "identity", "media", "support"]
TEAM_APPS = ["web", "api", "worker", "cache", "db"]


def tenants(tree, rng, scale, local_charts):
    cluster = "clusters/production"
    tree.put(f"{cluster}/flux-system/gotk-components.yaml", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": meta("flux-system", labels={
            "app.kubernetes.io/instance": "flux-system", "pod-security.kubernetes.io/warn": "restricted"})})
    tree.put(f"{cluster}/flux-system/gotk-sync.yaml",
             {"apiVersion": SRC_API, "kind": "GitRepository", "metadata": meta("flux-system", "flux-system"),
              "spec": {"interval": "1m0s", "ref": {"branch": "main"}, "secretRef": {"name": "flux-system"},
                       "url": REPO_URL}},
             {"apiVersion": KS_API, "kind": "Kustomization", "metadata": meta("flux-system", "flux-system"),
              "spec": {"interval": "10m0s", "path": f"./{cluster}", "prune": True,
                       "sourceRef": flux_source_ref(None)}})
    tree.put(f"{cluster}/flux-system/kustomization.yaml", kustomization(["gotk-components.yaml", "gotk-sync.yaml"]))

    def ks(name, path, deps=(), **more):
        spec = {}
        if deps:
            spec["dependsOn"] = [{"name": d} for d in deps]
        spec.update({"interval": "10m", "sourceRef": flux_source_ref(None),
                     "serviceAccountName": "kustomize-controller", "path": path, "prune": True})
        spec.update(more)
        return {"apiVersion": KS_API, "kind": "Kustomization", "metadata": meta(name, "flux-system"), "spec": spec}

    tree.put(f"{cluster}/infrastructure.yaml",
             ks("kyverno", "./infrastructure/kyverno", wait=True, timeout="5m"),
             ks("kyverno-policies", "./infrastructure/kyverno-policies", ["kyverno"]))
    tree.put(f"{cluster}/tenants.yaml", ks("tenants", "./tenants/production", ["kyverno-policies"]))
    if local_charts:
        write_chart(tree)
    tree.put("infrastructure/kyverno/kyverno.yaml",
             {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("kyverno")},
             {"apiVersion": SRC_API, "kind": "HelmRepository", "metadata": meta("kyverno", "kyverno"),
              "spec": {"interval": "24h", "url": "https://charts.example.org/kyverno"}},
             helmrelease("kyverno", "kyverno", chart_values(rng, "kyverno", 9443),
                         {"kind": "HelmRepository", "name": "kyverno", "chart": "kyverno", "version": "3.x"},
                         local_charts))
    tree.put("infrastructure/kyverno/kustomization.yaml", kustomization(["kyverno.yaml"]))
    tree.put("infrastructure/kyverno-policies/tenant-sources.yaml", {
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": meta("tenant-sources"),
        "spec": {"validationFailureAction": "Enforce", "background": False, "rules": [{
            "name": "tenants-read-the-platform-repository",
            "match": {"any": [{"resources": {"kinds": ["GitRepository", "OCIRepository"],
                                             "namespaceSelector": {"matchExpressions": [{
                                                 "key": "toolkit.fluxcd.io/tenant", "operator": "Exists"}]}}}]},
            "validate": {"message": "tenants read their apps from the platform repository",
                         "deny": {}}}]}})
    tree.put("infrastructure/kyverno-policies/tenant-service-account.yaml", {
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": meta("tenant-service-account"),
        "spec": {"validationFailureAction": "Enforce", "rules": [{
            "name": "kustomizations-impersonate",
            "match": {"any": [{"resources": {"kinds": ["Kustomization", "HelmRelease"]}}]},
            "exclude": {"any": [{"resources": {"namespaces": ["flux-system"]}}]},
            "validate": {"message": ".spec.serviceAccountName is required",
                         "pattern": {"spec": {"serviceAccountName": "?*"}}}}]}})
    tree.put("infrastructure/kyverno-policies/kustomization.yaml",
             kustomization(["tenant-sources.yaml", "tenant-service-account.yaml"]))

    listed, patches, teams = [], [], []
    for k in range(scale):
        for team in suffixed(TEAMS, k):
            teams.append(team)
            label = {"toolkit.fluxcd.io/tenant": team}
            tree.put(f"tenants/base/{team}/rbac.yaml",
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(team, labels=label)},
                     {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(team, team, labels=label)},
                     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                      "metadata": meta("gotk-reconciler", team, labels=label),
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                      "subjects": [{"kind": "User", "name": f"gotk:{team}:reconciler"},
                                   {"kind": "ServiceAccount", "name": team, "namespace": team}]})
            tree.put(f"tenants/base/{team}/sync.yaml", {
                "apiVersion": KS_API, "kind": "Kustomization", "metadata": meta(team, team),
                "spec": {"serviceAccountName": team, "interval": "5m", "sourceRef": flux_source_ref(),
                         "path": f"./teams/{team}/staging", "targetNamespace": team, "prune": True}})
            tree.put(f"tenants/base/{team}/kustomization.yaml",
                     kustomization(["rbac.yaml", "sync.yaml"], namespace=team))
            listed.append(f"../base/{team}")
            patches.append({"path": f"{team}-patch.yaml"})
            tree.put(f"tenants/production/{team}-patch.yaml", {
                "apiVersion": KS_API, "kind": "Kustomization", "metadata": meta(team, team),
                "spec": {"path": f"./teams/{team}/production"}}, patch=True)
            team_apps(tree, rng, team, local_charts)
    tree.put("tenants/production/kustomization.yaml", kustomization(listed, patches=patches))
    return cluster, teams


def team_apps(tree, rng, team, local_charts):
    root = f"teams/{team}"
    for app in TEAM_APPS:
        base = f"{root}/base/{app}"
        port = rng.choice([8080, 8000, 6379, 5432])
        if app == "cache":
            remote = {"kind": "HelmRepository", "name": "charts", "chart": "cache", "version": "18.x"}
            values = chart_values(rng, f"{team}-cache", 6379, persistence={"enabled": False})
            tree.put(f"{base}/repository.yaml", {
                "apiVersion": SRC_API, "kind": "HelmRepository", "metadata": meta("charts"),
                "spec": {"interval": "1h", "url": "https://charts.example.org/stable"}})
            tree.put(f"{base}/release.yaml", helmrelease("cache", None, values, remote, local_charts, "10m"))
            files = ["repository.yaml", "release.yaml"]
        else:
            claim = f"{app}-data" if app == "db" else None
            tree.put(f"{base}/deployment.yaml", deployment(app, None, rng, port, claim=claim))
            tree.put(f"{base}/service.yaml", service(app, None, port))
            files = ["deployment.yaml", "service.yaml"]
            if claim:
                tree.put(f"{base}/pvc.yaml", pvc(claim, None, rng.choice(CAPACITIES)))
                files.append("pvc.yaml")
            if app in ("web", "api"):
                tree.put(f"{base}/configmap.yaml", configmap(f"{app}-config", None, {"TEAM": team, "LOG": "info"}))
                files.append("configmap.yaml")
        tree.put(f"{base}/kustomization.yaml", kustomization(files))
    for env, replicas in [("staging", 1), ("production", 2)]:
        tree.put(f"{root}/{env}/replicas.yaml", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web"), "spec": {"replicas": replicas}},
            patch=True)
        tree.put(f"{root}/{env}/kustomization.yaml",
                 kustomization([f"../base/{a}" for a in TEAM_APPS], patches=[{"path": "replicas.yaml"}],
                               labels=[{"pairs": {"environment": env}}]))


def tenants_change(tree, teams):
    released = f"teams/{TEAMS[1]}/base/cache/release.yaml"
    hr = tree.objects[released][0]
    hr["spec"]["values"]["resources"]["limits"]["memory"] = "2048Mi"
    tree.put(released, hr)
    edited = f"teams/{TEAMS[2]}/base/web/deployment.yaml"
    dep = tree.objects[edited][0]
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/example-org/web:2.0.0"
    tree.put(edited, dep)
    # The dev team moves its database out: production stops listing it (staging keeps it).
    tree.unlist(f"teams/{TEAMS[0]}/production/kustomization.yaml", "../base/db")
    return f"more memory for {TEAMS[1]}'s cache, a new web image for {TEAMS[2]}, {TEAMS[0]} retires its database"


# ---------------------------------------------------------------------------------------------

LAYOUTS = {"ks-tree": (ks_tree, ks_tree_change), "operator": (operator, operator_change),
           "tenants": (tenants, tenants_change)}


def write(tree, out):
    for path in list(Path(out).rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(out).parts:
            if path.relative_to(out).as_posix() not in tree.files:
                path.unlink()
    for path, text in sorted(tree.files.items()):
        target = Path(out) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for d in sorted({p for p in Path(out).rglob("*") if p.is_dir() and ".git" not in p.relative_to(out).parts},
                    key=lambda p: -len(p.parts)):
        if not any(d.iterdir()):
            d.rmdir()


def git(out, *args, when=0):
    stamp = f"{1767225600 + when} +0000"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(out), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C", "TZ": "UTC",
           # no automatic gc: a detached one repacks .git while write() walks the tree, and
           # main() runs gc itself once both commits are made
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
           "GIT_AUTHOR_NAME": "Bench Author", "GIT_AUTHOR_EMAIL": "bench@example.net", "GIT_AUTHOR_DATE": stamp,
           "GIT_COMMITTER_NAME": "Bench Author", "GIT_COMMITTER_EMAIL": "bench@example.net",
           "GIT_COMMITTER_DATE": stamp}
    return subprocess.run(["git", "-C", str(out), *args], check=True, env=env, capture_output=True,
                          text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layout", required=True, choices=sorted(LAYOUTS))
    ap.add_argument("--scale", type=int, default=1, help="1: the size of the public repositories it imitates")
    ap.add_argument("--local-charts", action="store_true",
                    help="every HelmRelease uses the chart in charts/app, so Helm renders offline")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("out")
    a = ap.parse_args()
    if a.scale < 1:
        ap.error("--scale must be at least 1")
    out = Path(a.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        ap.error(f"{out} exists and is not an empty folder")
    out.mkdir(parents=True, exist_ok=True)

    build, change = LAYOUTS[a.layout]
    rng = random.Random(f"{a.layout}:{a.scale}:{a.local_charts}:{a.seed}")
    tree = Tree()
    entry, names = build(tree, rng, a.scale, a.local_charts)
    git(out, "init", "-q", "-b", "main")
    write(tree, out)
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", f"{a.layout} repository at scale {a.scale}")
    message = change(tree, names)
    write(tree, out)
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", message, when=3600)
    git(out, "gc", "-q", "--prune=now")
    files = len(git(out, "ls-files", "-z").split("\0")) - 1
    print(json.dumps({"layout": a.layout, "scale": a.scale, "path": str(out), "entry": entry,
                      "kustomizations": tree.count("kustomize.toolkit.fluxcd.io/", "Kustomization"),
                      "helmreleases": tree.count("helm.toolkit.fluxcd.io/", "HelmRelease"), "files": files}))


if __name__ == "__main__":
    sys.exit(main())
