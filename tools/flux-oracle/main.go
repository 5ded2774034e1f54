// Command flux-oracle builds every Flux Kustomization of a repository with Flux's own
// libraries and prints, for each, the set of objects it applies. fluxwave's tests hold
// fluxwave's inventory against this output (tests/cli/differential.rs); it is a test tool,
// not part of the product.
//
// Each Kustomization is built the way kustomize-controller builds it
// (internal/controller/kustomization_controller.go, reconcile, generate and build):
//
//  1. the source is a copy of the repository (one per round of builds; the kustomization the
//     generator writes is put back after each build with Flux's CleanDirectory); spec.path
//     is joined to it with securejoin.SecureJoin and must exist ("kustomization path not
//     found");
//  2. kustomize.NewGenerator(root, kustomization).WriteFile(dirPath) writes Flux's
//     kustomization (targetNamespace, namePrefix/nameSuffix, patches, components, images...)
//     over the folder's own, or generates one for a folder without;
//  3. kustomize.SecureBuild(root, dirPath, allowRemoteBases) builds it;
//  4. every object must have an apiVersion, a kind and a name;
//  5. when spec.postBuild is set, kustomize.SubstituteVariables runs on every object, with
//     SubstituteWithStrict (the StrictPostBuildSubstitutions feature gate, on by default since
//     kustomize-controller v1.9: internal/features/features.go) and SubstituteWithAlways
//     (spec.postBuild.substituteStrategy: Always).
//
// A build that fails at any step is recorded with its error and applies nothing. Decryption
// is not run: SOPS encrypts values, not the identities compared here.
//
// substituteFrom reads ConfigMaps and Secrets from the cluster (LoadVariables, through a
// controller-runtime client). Here that client is a fake one seeded with the ConfigMaps and
// Secrets the environment's builds produce, since in the cluster they exist once applied (a
// SOPS-encrypted Secret with its keys, each holding its encrypted text); the whole environment is built again with the seed of the previous round
// until the seed stops changing (the state the cluster converges to). A reference that is
// not found fails the build unless it is `optional: true`, in which case LoadVariables skips
// it.
//
// Every Flux Kustomization (kustomize.toolkit.fluxcd.io) in a build whose sourceRef is the
// root's source, or one named by -source (the source of a second root of the same cluster
// that syncs this repository too), is built next, at its spec.path, breadth first; one whose
// source is another is recorded as skipped, with the source it reads.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/fluxcd/pkg/kustomize"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"
)

const fluxGroup = "kustomize.toolkit.fluxcd.io"

// maxRounds bounds the substituteFrom fixpoint: each round can only add what the previous
// one made, so a chain longer than this is a loop.
const maxRounds = 10

type output struct {
	Kustomizations []result `json:"kustomizations"`
}

type result struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	// Why Flux's build of it fails; nothing of it is applied.
	Error string `json:"error,omitempty"`
	// Why it is not built here: its source is not the root's (`GitRepository/ns/name`).
	Skipped string `json:"skipped,omitempty"`
	// `group/kind/namespace/name` of every object it applies, sorted; the group and the
	// namespace are empty for the core group and cluster-scoped objects.
	Objects []string `json:"objects"`
	// Those of Objects whose metadata says `kustomize.toolkit.fluxcd.io/prune: disabled`:
	// garbage collection leaves them in the cluster (kustomize-controller passes that
	// exclusion to fluxcd/pkg ssa's DeleteAll).
	Kept []string `json:"kept,omitempty"`
}

type source struct{ kind, namespace, name string }

func (s source) String() string { return s.kind + "/" + s.namespace + "/" + s.name }

func sourceOf(u *unstructured.Unstructured) source {
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "sourceRef", "kind")
	ns, _, _ := unstructured.NestedString(u.Object, "spec", "sourceRef", "namespace")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "sourceRef", "name")
	if ns == "" {
		ns = u.GetNamespace()
	}
	return source{kind, ns, name}
}

func isFluxKustomization(gvkGroup, kind string) bool {
	return gvkGroup == fluxGroup && kind == "Kustomization"
}

func main() {
	if ran, code := caseCommand(os.Args[1:]); ran {
		os.Exit(code)
	}
	repo := flag.String("repo", "", "the repository folder")
	rootFile := flag.String("root", "", "a YAML file holding the root Flux Kustomization (with several, the one whose spec.path is -env)")
	env := flag.String("env", "", "the environment's path: the root is flux bootstrap's flux-system/flux-system at this path, unless -root is given")
	strict := flag.Bool("strict", true, "StrictPostBuildSubstitutions: a ${VAR} without a value or a default fails the build")
	noRemote := flag.Bool("no-remote-bases", false, "refuse remote bases, as kustomize-controller's --no-remote-bases")
	also := map[source]bool{}
	flag.Func("source", "KIND/NAMESPACE/NAME of a source that is this repository too (repeatable)", func(v string) error {
		parts := strings.Split(v, "/")
		if len(parts) != 3 {
			return fmt.Errorf("want KIND/NAMESPACE/NAME, got %q", v)
		}
		also[source{parts[0], parts[1], parts[2]}] = true
		return nil
	})
	flag.Parse()
	if *repo == "" || (*rootFile == "" && *env == "") {
		fmt.Fprintln(os.Stderr, "usage: flux-oracle -repo DIR (-root FILE [-env PATH] | -env PATH)")
		os.Exit(2)
	}
	root, err := readRoot(*repo, *rootFile, *env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flux-oracle:", err)
		os.Exit(2)
	}
	o := &oracle{repo: *repo, strict: *strict, allowRemote: !*noRemote, also: also}
	out, err := o.converge(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flux-oracle:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "flux-oracle:", err)
		os.Exit(1)
	}
}

// readRoot returns the root Kustomization: the one in file (the one whose spec.path is env
// when it holds several), or the one `flux bootstrap` writes for env.
func readRoot(repo, file, env string) (*unstructured.Unstructured, error) {
	if file == "" {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fluxGroup + "/v1",
			"kind":       "Kustomization",
			"metadata":   map[string]interface{}{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]interface{}{
				"interval":  "10m0s",
				"path":      "./" + strings.Trim(env, "/"),
				"prune":     true,
				"sourceRef": map[string]interface{}{"kind": "GitRepository", "name": "flux-system"},
			},
		}}, nil
	}
	data, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		return nil, err
	}
	docs, err := readObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var found []*unstructured.Unstructured
	for _, d := range docs {
		if isFluxKustomization(d.GroupVersionKind().Group, d.GetKind()) {
			found = append(found, d)
		}
	}
	for _, d := range found {
		p, _, _ := unstructured.NestedString(d.Object, "spec", "path")
		if env != "" && cleanPath(p) == cleanPath(env) {
			return d, nil
		}
	}
	if len(found) > 0 {
		return found[0], nil
	}
	return nil, fmt.Errorf("%s holds no Flux Kustomization", file)
}

func cleanPath(p string) string {
	return strings.Trim(filepath.Clean("/"+p), "/")
}

func readObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]interface{}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

type oracle struct {
	repo        string
	strict      bool
	allowRemote bool
	// Sources besides the root's that are this repository (-source).
	also map[source]bool
}

// converge builds the environment until the ConfigMaps and Secrets it produces, which
// substituteFrom reads, stop changing.
func (o *oracle) converge(root *unstructured.Unstructured) (*output, error) {
	var seed []client.Object
	var last map[string]client.Object
	for round := 0; round < maxRounds; round++ {
		out, made, err := o.buildAll(root, seed)
		if err != nil {
			return nil, err
		}
		if last != nil && reflect.DeepEqual(last, made) {
			return out, nil
		}
		if round == 0 && len(made) == 0 {
			return out, nil
		}
		last = made
		seed = seed[:0]
		keys := make([]string, 0, len(made))
		for k := range made {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			seed = append(seed, made[k].DeepCopyObject().(client.Object))
		}
	}
	return nil, fmt.Errorf("the ConfigMaps and Secrets read by substituteFrom did not settle in %d rounds", maxRounds)
}

// buildAll builds the root and every Kustomization it leads to, reading substituteFrom
// from seed; it returns the results and the plain ConfigMaps and Secrets built.
func (o *oracle) buildAll(root *unstructured.Unstructured, seed []client.Object) (*output, map[string]client.Object, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(seed...).Build()
	tmp, err := os.MkdirTemp("", "flux-oracle-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(o.repo, tmp); err != nil {
		return nil, nil, err
	}
	rootSource := sourceOf(root)
	made := map[string]client.Object{}
	seen := map[string]bool{root.GetNamespace() + "/" + root.GetName(): true}
	queue := []*unstructured.Unstructured{root}
	out := &output{Kustomizations: []result{}}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		path, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		r := result{Namespace: k.GetNamespace(), Name: k.GetName(), Path: path, Objects: []string{}}
		if k != root && sourceOf(k) != rootSource && !o.also[sourceOf(k)] {
			r.Skipped = sourceOf(k).String()
			out.Kustomizations = append(out.Kustomizations, r)
			continue
		}
		objects, err := o.build(tmp, kube, k)
		if err != nil {
			r.Error = err.Error()
			out.Kustomizations = append(out.Kustomizations, r)
			continue
		}
		for _, obj := range objects {
			gvk := obj.GroupVersionKind()
			id := strings.Join([]string{gvk.Group, gvk.Kind, obj.GetNamespace(), obj.GetName()}, "/")
			r.Objects = append(r.Objects, id)
			if obj.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" ||
				obj.GetLabels()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" {
				r.Kept = append(r.Kept, id)
			}
			if isFluxKustomization(gvk.Group, gvk.Kind) {
				key := obj.GetNamespace() + "/" + obj.GetName()
				if !seen[key] {
					seen[key] = true
					queue = append(queue, obj)
				}
			}
			if c := plainConfig(obj); c != nil {
				made[gvk.Kind+"/"+obj.GetNamespace()+"/"+obj.GetName()] = c
			}
		}
		sort.Strings(r.Objects)
		sort.Strings(r.Kept)
		out.Kustomizations = append(out.Kustomizations, r)
	}
	return out, made, nil
}

// plainConfig is obj as the API server stores it when it is a ConfigMap or a Secret
// (stringData merged into data), else nil.
func plainConfig(obj *unstructured.Unstructured) client.Object {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "" || gvk.Version != "v1" {
		return nil
	}
	switch gvk.Kind {
	case "ConfigMap":
		var cm corev1.ConfigMap
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &cm) != nil {
			return nil
		}
		cm.ResourceVersion = ""
		return &cm
	case "Secret":
		if _, sops := obj.Object["sops"]; sops {
			return sopsSecret(obj)
		}
		var s corev1.Secret
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &s) != nil {
			return nil
		}
		if len(s.StringData) > 0 && s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
		s.ResourceVersion = ""
		return &s
	}
	return nil
}

// sopsSecret is a SOPS-encrypted Secret as the cluster holds it once Flux has decrypted it,
// but for its values: without the keys, each key of data and stringData holds its encrypted
// text, so substituteFrom finds every variable the Secret defines.
func sopsSecret(obj *unstructured.Unstructured) client.Object {
	s := &corev1.Secret{Data: map[string][]byte{}}
	s.SetName(obj.GetName())
	s.SetNamespace(obj.GetNamespace())
	for _, field := range []string{"data", "stringData"} {
		values, _, _ := unstructured.NestedMap(obj.Object, field)
		for k, v := range values {
			s.Data[k] = []byte(fmt.Sprint(v))
		}
	}
	return s
}

// build is kustomize-controller's generate and build for Kustomization k, on tmp, a copy of
// the repository made once per round of buildAll: the kustomization the generator writes is
// put back afterwards by Flux's own WithSaveOriginalKustomization and CleanDirectory, so
// each build sees the repository as it is (kustomize-controller copies the artifact for
// every reconcile; restoring the one file the generator writes gives the same tree, and a
// revision of a hundred Kustomizations is built in seconds instead of minutes).
func (o *oracle) build(tmp string, kube client.Client, k *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	objects, err := o.buildIn(tmp, kube, k)
	if err != nil {
		// The copy's place means nothing to the reader.
		return nil, errors.New(strings.ReplaceAll(err.Error(), tmp, ""))
	}
	return objects, nil
}

func (o *oracle) buildIn(tmp string, kube client.Client, k *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	path, _, _ := unstructured.NestedString(k.Object, "spec", "path")
	dirPath, err := securejoin.SecureJoin(tmp, path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dirPath); err != nil {
		return nil, fmt.Errorf("kustomization path not found: %w", err)
	}
	action, err := kustomize.NewGenerator(tmp, *k).WriteFile(dirPath, kustomize.WithSaveOriginalKustomization())
	defer kustomize.CleanDirectory(dirPath, action)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	m, err := kustomize.SecureBuild(tmp, dirPath, o.allowRemote)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %w", err)
	}
	_, hasPostBuild, _ := unstructured.NestedMap(k.Object, "spec", "postBuild")
	strategy, _, _ := unstructured.NestedString(k.Object, "spec", "postBuild", "substituteStrategy")
	var out []*unstructured.Unstructured
	for _, res := range m.Resources() {
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String())
		}
		if hasPostBuild {
			outRes, err := kustomize.SubstituteVariables(context.Background(), kube, *k, res,
				kustomize.SubstituteWithStrict(o.strict),
				kustomize.SubstituteWithAlways(strategy == "Always"))
			if err != nil {
				return nil, fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
			}
			if outRes != nil {
				if _, err := m.Replace(res); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, res := range m.Resources() {
		u, err := toUnstructured(res)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func toUnstructured(res *resource.Resource) (*unstructured.Unstructured, error) {
	data, err := res.AsYAML()
	if err != nil {
		return nil, err
	}
	var m map[string]interface{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// copyTree copies the regular files and folders of from into to, leaving out `.git` (the
// source artifact holds none).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return nil
	})
}
