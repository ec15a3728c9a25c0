package kubernetes_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/txload/txload/internal/cli"
	"github.com/txload/txload/workload/all"
)

// strict decodes a manifest into the Kubernetes API type: a field that the
// type does not have (a typo, a field at the wrong level) is an error.
func strict[T any](t *testing.T, file string) *T {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &v
}

// parses checks that txload's own command line accepts args: the command
// and workload exist, and every flag and value parses.
func parses(t *testing.T, file string, args []string) {
	t.Helper()
	ran := false
	root := cli.Root(cli.Env{Stdout: io{}, Stderr: io{}, Registry: all.Registry(), Version: "test"}, &ran)
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Fatalf("%s: txload %s: no such command: %v", file, strings.Join(args, " "), err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%s: txload %s: %v", file, strings.Join(args, " "), err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Fatalf("%s: txload %s: %v", file, strings.Join(args, " "), err)
	}
}

type io struct{}

func (io) Write(p []byte) (int, error) { return len(p), nil }

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func checkTarget(t *testing.T, file string, c corev1.Container, secret *corev1.Secret) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "DATABASE_URL" {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil || ref.Name != secret.Name {
				t.Fatalf("%s: DATABASE_URL does not come from the Secret %s", file, secret.Name)
			}
			if _, ok := secret.StringData[ref.Key]; !ok {
				t.Fatalf("%s: the Secret %s has no key %q", file, secret.Name, ref.Key)
			}
			return
		}
	}
	t.Fatalf("%s: container %s has no DATABASE_URL", file, c.Name)
}

// The manifests are valid Kubernetes objects, and fit together: N indexed
// load generators, each writing its own document to the shared volume, the
// target from the Secret, a merge step reading exactly those N documents;
// every txload command line parses.
func TestManifests(t *testing.T) {
	secret := strict[corev1.Secret](t, "secret.yaml")
	pvc := strict[corev1.PersistentVolumeClaim](t, "results-pvc.yaml")
	initJob := strict[batchv1.Job](t, "init-job.yaml")
	run := strict[batchv1.Job](t, "run-job.yaml")
	merge := strict[batchv1.Job](t, "merge-job.yaml")
	for file, kind := range map[string]string{"secret.yaml": secret.Kind, "results-pvc.yaml": pvc.Kind, "init-job.yaml": initJob.Kind, "run-job.yaml": run.Kind, "merge-job.yaml": merge.Kind} {
		if want := map[string]string{"secret.yaml": "Secret", "results-pvc.yaml": "PersistentVolumeClaim"}[file]; want != "" && kind != want || want == "" && kind != "Job" {
			t.Errorf("%s: kind %q", file, kind)
		}
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("results-pvc.yaml: the volume must be ReadWriteMany: the pods write to it at once")
	}

	// The load generators.
	s := run.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatal("run-job.yaml: completionMode must be Indexed: txload reads its index from $JOB_COMPLETION_INDEX")
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		t.Fatal("run-job.yaml: completions and parallelism must be equal: the instances run at the same time")
	}
	n := int(*s.Completions)
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatal("run-job.yaml: one container")
	}
	c := s.Template.Spec.Containers[0]
	parses(t, "run-job.yaml", c.Args)
	if c.Args[0] != "run" || flagValue(c.Args, "--instances") != strconv.Itoa(n) {
		t.Fatalf("run-job.yaml: txload %v must run with --instances %d (the completions)", c.Args, n)
	}
	if flagValue(c.Args, "--init") != "skip" {
		t.Errorf("run-job.yaml: the instances must run with --init skip (the schema is loaded once, by txload-init)")
	}
	checkTarget(t, "run-job.yaml", c, secret)
	index := ""
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			index = e.Name
		}
	}
	if index == "" {
		t.Fatal("run-job.yaml: no environment variable holds the completion index")
	}
	mount := func(file string, spec corev1.PodSpec, c corev1.Container) string {
		t.Helper()
		for _, m := range c.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
					return m.MountPath
				}
			}
		}
		t.Fatalf("%s: container %s does not mount the claim %s", file, c.Name, pvc.Name)
		return ""
	}
	dir := mount("run-job.yaml", s.Template.Spec, c)
	jsonArg := flagValue(c.Args, "--json")
	if !strings.HasPrefix(jsonArg, dir+"/") || !strings.Contains(jsonArg, "$("+index+")") {
		t.Fatalf("run-job.yaml: --json %s must name a file per index ($(%s)) under %s", jsonArg, index, dir)
	}
	var files []string
	for i := range n {
		files = append(files, strings.ReplaceAll(jsonArg, "$("+index+")", strconv.Itoa(i)))
	}

	// The schema, loaded once.
	ic := initJob.Spec.Template.Spec.Containers[0]
	parses(t, "init-job.yaml", ic.Args)
	checkTarget(t, "init-job.yaml", ic, secret)
	if ic.Args[0] != "init" || ic.Args[1] != map[string]string{"select-only": "tpcb", "simple-update": "tpcb", "tpcb-like": "tpcb"}[c.Args[1]] {
		t.Errorf("init-job.yaml: txload %v does not load the schema %s needs", ic.Args, c.Args[1])
	}

	// The merge step reads exactly the N documents.
	ms := merge.Spec.Template.Spec
	steps := append(slices.Clone(ms.InitContainers), ms.Containers...)
	merged := 0
	for _, mc := range steps {
		parses(t, "merge-job.yaml", mc.Args)
		mount("merge-job.yaml", ms, mc)
		if mc.Args[0] != "merge" {
			continue
		}
		merged++
		var inputs []string
		for _, a := range mc.Args[1:] {
			if strings.HasPrefix(a, "-") {
				break
			}
			inputs = append(inputs, a)
		}
		if !slices.Equal(inputs, files) {
			t.Errorf("merge-job.yaml: %s merges %v, the instances write %v", mc.Name, inputs, files)
		}
	}
	if merged == 0 {
		t.Fatal("merge-job.yaml: no txload merge")
	}
}
