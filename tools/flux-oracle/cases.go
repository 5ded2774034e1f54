package main

// Tables of cases for the pieces fluxwave ports by hand, answered by the upstream library
// itself: each subcommand reads lines of input from stdin and writes each line back with the
// library's answer as its last tab-separated column. Lines starting with `#` and blank lines
// are copied as they are, so a table file is its own input.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/kustomize/api/filters/replacement"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// cases maps a subcommand to the function answering one line's input columns.
var cases = map[string]func(columns []string) (string, error){
	"json6902":     json6902Case,
	"envsubst":     envsubstCase,
	"semver":       semverCase,
	"ignore":       ignoreCase,
	"replacements": replacementsCase,
	"kustomize":    kustomizeCase,
	"regexp":       regexpCase,
}

// inputs is how many input columns each subcommand reads (two unless said).
var inputs = map[string]int{"json6902": 2, "envsubst": 2, "semver": 2, "ignore": 3, "replacements": 2, "kustomize": 2, "regexp": 2}

// runCases answers every line of in; a line whose input is malformed is an error, so a typo
// in a table cannot pass as an expected failure.
func runCases(answer func([]string) (string, error), inputs int, in io.Reader, out io.Writer) error {
	scan := bufio.NewScanner(in)
	scan.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriter(out)
	defer w.Flush()
	for n := 1; scan.Scan(); n++ {
		line := scan.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			fmt.Fprintln(w, line)
			continue
		}
		columns := strings.Split(line, "\t")
		if len(columns) < inputs {
			return fmt.Errorf("line %d: %d columns, want %d inputs", n, len(columns), inputs)
		}
		got, err := answer(columns[:inputs])
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		fmt.Fprintln(w, strings.Join(append(columns[:inputs:inputs], got), "\t"))
	}
	return scan.Err()
}

// json6902Case applies a JSON 6902 patch (column 2) to a JSON document (column 1) as
// kustomize's patchjson6902 filter does: gopkg.in/evanphx/json-patch.v4 with its default
// options. The answer is the patched document, compact with its keys sorted, or `error`.
func json6902Case(columns []string) (string, error) {
	doc, patch := []byte(columns[0]), []byte(columns[1])
	if !json.Valid(doc) || !json.Valid(patch) {
		return "", fmt.Errorf("document and patch must be JSON")
	}
	decoded, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return "error", nil
	}
	out, err := decoded.Apply(doc)
	if err != nil {
		return "error", nil
	}
	var v interface{}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", err
	}
	canonical, err := json.Marshal(v)
	return string(canonical), err
}

// caseCommand runs the subcommand named by args[0], if there is one.
func caseCommand(args []string) (bool, int) {
	if len(args) == 0 {
		return false, 0
	}
	answer, ok := cases[args[0]]
	if !ok {
		return false, 0
	}
	if err := runCases(answer, inputs[args[0]], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flux-oracle "+args[0]+":", err)
		return true, 2
	}
	return true, 0
}

// envsubstCase evaluates a text (column 2, a JSON string) with variables (column 1, a JSON
// object of strings) as kustomize-controller's postBuild substitution does in strict mode
// (fluxcd/pkg kustomize `varSubstitution`: a variable the object lacks is not set). The
// answer is the result as a JSON string, or `error`.
func envsubstCase(columns []string) (string, error) {
	var vars map[string]string
	var text string
	if err := json.Unmarshal([]byte(columns[0]), &vars); err != nil {
		return "", fmt.Errorf("variables: %w", err)
	}
	if err := json.Unmarshal([]byte(columns[1]), &text); err != nil {
		return "", fmt.Errorf("text: %w", err)
	}
	out, err := envsubst.Eval(text, func(s string) (string, bool) {
		v, ok := vars[s]
		return v, ok
	})
	if err != nil {
		return "error", nil
	}
	answer, err := json.Marshal(out)
	return string(answer), err
}

// regexpCase matches a text (column 2, a JSON string) against a pattern (column 1, a JSON
// string) as kustomize matches a patch or replacement target's name, namespace, kind and
// the rest (api/types/selector.go `NewSelectorRegex`: Go's regexp.Compile of the pattern
// anchored as `^(?:PATTERN)$`). The answer is `true`, `false`, or `error` when it does not
// compile.
func regexpCase(columns []string) (string, error) {
	var pattern, text string
	if err := json.Unmarshal([]byte(columns[0]), &pattern); err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	if err := json.Unmarshal([]byte(columns[1]), &text); err != nil {
		return "", fmt.Errorf("text: %w", err)
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return "error", nil
	}
	return fmt.Sprint(re.MatchString(text)), nil
}

// semverCase checks a version (column 2) against a constraint (column 1) as
// source-controller picks a chart version (Masterminds/semver v3: NewConstraint, NewVersion,
// Check). The answer is `true`, `false`, or `error` when either does not parse.
func semverCase(columns []string) (string, error) {
	c, err := semver.NewConstraint(columns[0])
	if err != nil {
		return "error", nil
	}
	v, err := semver.NewVersion(columns[1])
	if err != nil {
		return "error", nil
	}
	return fmt.Sprint(c.Check(v)), nil
}

// ignoreCase judges a path (column 2; a folder when column 3 is `dir`) against the
// `.sourceignore` files of column 1 (a JSON object: each file's text by the folder it is in,
// "" for the root) as source-controller's artifact filter does (fluxcd/pkg sourceignore:
// ReadPatterns scoped to each folder, in sorted folder order, then the matcher of
// artifact/storage SourceIgnoreFilter). The answer is `true` when the path is left out of
// the artifact.
func ignoreCase(columns []string) (string, error) {
	var files map[string]string
	if err := json.Unmarshal([]byte(columns[0]), &files); err != nil {
		return "", fmt.Errorf("files: %w", err)
	}
	dirs := make([]string, 0, len(files))
	for d := range files {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var ps []gitignore.Pattern
	for _, d := range dirs {
		var domain []string
		if d != "" {
			domain = strings.Split(d, "/")
		}
		ps = append(ps, sourceignore.ReadPatterns(strings.NewReader(files[d]), domain)...)
	}
	// fluxcd/pkg artifact/storage SourceIgnoreFilter: the default exclusions when there is
	// no pattern at all, else the VCS patterns and the patterns only.
	m := sourceignore.NewDefaultMatcher(ps, nil)
	if len(ps) > 0 {
		m = sourceignore.NewMatcher(append(sourceignore.VCSPatterns(nil), ps...))
	}
	return fmt.Sprint(m.Match(strings.Split(columns[1], "/"), columns[2] == "dir")), nil
}

// replacementsCase runs a kustomization's `replacements` (column 2, a JSON list of inline
// replacements, read as Flux's generator reads the kustomization at spec.path before it
// writes it back for kustomize: sigs.k8s.io/yaml Unmarshal into types.ReplacementField, so
// field names match without regard to case and unknown fields are dropped) over objects (column 1, a JSON list) with kustomize's replacement
// filter (api/filters/replacement, which ReplacementTransformerPlugin applies). The answer
// is the objects after it, compact with their keys sorted, or `error`.
func replacementsCase(columns []string) (string, error) {
	var objects []json.RawMessage
	if err := json.Unmarshal([]byte(columns[0]), &objects); err != nil {
		return "", fmt.Errorf("objects: %w", err)
	}
	if !json.Valid([]byte(columns[1])) {
		return "", fmt.Errorf("replacements must be JSON")
	}
	var fields []types.ReplacementField
	if err := yaml.Unmarshal([]byte(columns[1]), &fields); err != nil {
		return "error", nil
	}
	var list []types.Replacement
	for _, f := range fields {
		if f.Path != "" {
			return "", fmt.Errorf("a replacement from a file is not a table case")
		}
		list = append(list, f.Replacement)
	}
	nodes := make([]*kyaml.RNode, 0, len(objects))
	for _, o := range objects {
		n, err := kyaml.Parse(string(o))
		if err != nil {
			return "", fmt.Errorf("object: %w", err)
		}
		nodes = append(nodes, n)
	}
	out, err := replacement.Filter{Replacements: list}.Filter(nodes)
	if err != nil {
		return "error", nil
	}
	return objectsAnswer(out)
}

// kustomizeCase builds a kustomization (column 2, as JSON; the generators and patch tables
// give theirs) in a folder holding files (column 1, a JSON object
// of each file's text by its path in the folder) with kustomize's krusty, as Flux builds it
// (no plugins, LoadRestrictionsNone), on an in-memory file system. The answer is the
// objects built, each compact with its keys sorted, in build order, or `error`.
func kustomizeCase(columns []string) (string, error) {
	var files map[string]string
	if err := json.Unmarshal([]byte(columns[0]), &files); err != nil {
		return "", fmt.Errorf("files: %w", err)
	}
	if !json.Valid([]byte(columns[1])) {
		return "", fmt.Errorf("the kustomization must be JSON")
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.MkdirAll("/k"); err != nil {
		return "", err
	}
	for name, text := range files {
		path := "/k/" + name
		if i := strings.LastIndex(path, "/"); i > 0 {
			if err := fs.MkdirAll(path[:i]); err != nil {
				return "", err
			}
		}
		if err := fs.WriteFile(path, []byte(text)); err != nil {
			return "", err
		}
	}
	if err := fs.WriteFile("/k/kustomization.yaml", []byte(columns[1])); err != nil {
		return "", err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	m, err := krusty.MakeKustomizer(opts).Run(fs, "/k")
	if err != nil {
		return "error", nil
	}
	return objectsAnswer(m.Resources())
}

// objectsAnswer is the answer of a case whose result is objects: a JSON list of them, each
// compact with its keys sorted, or `error` when one cannot be written as JSON.
func objectsAnswer[T json.Marshaler](objects []T) (string, error) {
	answer := make([]interface{}, 0, len(objects))
	for _, o := range objects {
		j, err := o.MarshalJSON()
		if err != nil {
			return "error", nil
		}
		var v interface{}
		if err := json.Unmarshal(j, &v); err != nil {
			return "", err
		}
		answer = append(answer, v)
	}
	canonical, err := json.Marshal(answer)
	return string(canonical), err
}
