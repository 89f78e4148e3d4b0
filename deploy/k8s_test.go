package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/contrib/envconfig"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/node"
)

// manifests is the Kubernetes example: every object of every file in
// deploy/k8s, decoded strictly into the API types.
type manifests struct {
	files       []string // the object files, kustomization.yaml aside
	deployments []*appsv1.Deployment
	configMaps  map[string]*corev1.ConfigMap
	services    []*corev1.Service
	claims      map[string]*corev1.PersistentVolumeClaim
	namespaces  []string
}

// load decodes every document of deploy/k8s/*.yaml with a strict decoder
// over the core and apps API groups: an unknown kind, an unknown field (a
// typo such as readinesProbe) or a value of the wrong type fails.
func load(t *testing.T) manifests {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, appsv1.AddToScheme(scheme))
	decoder := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})

	paths, err := filepath.Glob("k8s/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	m := manifests{configMaps: map[string]*corev1.ConfigMap{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	for _, path := range paths {
		if filepath.Base(path) == "kustomization.yaml" {
			continue // kustomize's own file, checked in TestKustomizationAppliesEveryManifest
		}
		m.files = append(m.files, filepath.Base(path))
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		docs := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, path)
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, gvk, err := decoder.Decode(doc, nil, nil)
			require.NoError(t, err, "%s: every object is a Kubernetes API object of a known kind, without unknown fields", path)
			switch o := obj.(type) {
			case *appsv1.Deployment:
				m.deployments = append(m.deployments, o)
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Service:
				m.services = append(m.services, o)
			case *corev1.PersistentVolumeClaim:
				m.claims[o.Name] = o
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o.Name)
				continue
			default:
				t.Fatalf("%s: %s is a kind the example does not use", path, gvk)
			}
			assert.Equal(t, "keeper", obj.(interface{ GetNamespace() string }).GetNamespace(), "%s: every object is in the namespace keeper", path)
		}
	}
	return m
}

// stripComments drops whole-line comments, so a document of comments alone
// counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// keeper returns the Deployment's keeper container and the role it runs.
func keeper(t *testing.T, d *appsv1.Deployment) (*corev1.Container, string) {
	t.Helper()
	require.Len(t, d.Spec.Template.Spec.Containers, 1, d.Name)
	c := &d.Spec.Template.Spec.Containers[0]
	require.Len(t, c.Args, 1, "%s runs one keeper subcommand", d.Name)
	require.Contains(t, []string{"api", "worker"}, c.Args[0], d.Name)
	return c, c.Args[0]
}

// environment is what the container's process sees: its ConfigMaps, then its
// env, with the pod's labels resolved where a variable takes one.
func (m manifests) environment(t *testing.T, d *appsv1.Deployment, c *corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		require.NotNil(t, from.ConfigMapRef, "%s: envFrom only from ConfigMaps (Secrets are files)", d.Name)
		cm, ok := m.configMaps[from.ConfigMapRef.Name]
		require.True(t, ok, "%s: ConfigMap %s is in the example", d.Name, from.ConfigMapRef.Name)
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			label, ok := strings.CutPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.labels['")
			require.True(t, ok, "%s: %s comes from a pod label", d.Name, e.Name)
			v, ok := d.Spec.Template.Labels[strings.TrimSuffix(label, "']")]
			require.True(t, ok, "%s: %s names a label the pod has", d.Name, e.Name)
			env[e.Name] = v
		default:
			t.Errorf("%s: %s comes from a Secret or a resource: Secrets are mounted as files", d.Name, e.Name)
		}
	}
	return env
}

func TestKustomizationAppliesEveryManifest(t *testing.T) {
	m := load(t)
	raw, err := os.ReadFile("k8s/kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
	}
	require.NoError(t, yaml.UnmarshalStrict(raw, &k))
	assert.Equal(t, "Kustomization", k.Kind)
	assert.Equal(t, "keeper", k.Namespace)
	assert.ElementsMatch(t, m.files, k.Resources, "kubectl apply -k applies every file, and kubectl apply -f of the directory the same")
	assert.Equal(t, []string{"keeper"}, m.namespaces)
}

func TestTheAPIAndTheWorkerProbeReadyzAndHealthOnThePortTheyListenOnThePodsInterface(t *testing.T) {
	m := load(t)
	roles := map[string]int{}
	for _, d := range m.deployments {
		c, role := keeper(t, d)
		roles[role]++
		env := m.environment(t, d, c)
		// The API serves its health beside the API; a worker, which has none,
		// on KEEPER_HEALTH_ADDR, by default 127.0.0.1: not the pod's interface.
		addrEnv := map[string]string{"api": "KEEPER_HTTP_ADDR", "worker": "KEEPER_HEALTH_ADDR"}[role]
		host, port, err := net.SplitHostPort(env[addrEnv])
		require.NoError(t, err, "%s: %s", d.Name, addrEnv)
		assert.Equal(t, "0.0.0.0", host, "%s: %s listens on the pod's interface, where the kubelet probes", d.Name, addrEnv)

		for probe, want := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/health"} {
			require.NotNil(t, probe, "%s: a readiness and a liveness probe", d.Name)
			require.NotNil(t, probe.HTTPGet, d.Name)
			assert.Equal(t, want, probe.HTTPGet.Path, d.Name)
			var probed int32
			for _, p := range c.Ports {
				if p.Name == probe.HTTPGet.Port.String() || p.ContainerPort == probe.HTTPGet.Port.IntVal {
					probed = p.ContainerPort
				}
			}
			assert.Equal(t, port, strconv.Itoa(int(probed)), "%s: %s is probed on the port of %s", d.Name, want, addrEnv)
		}
	}
	assert.Equal(t, map[string]int{"api": 1, "worker": 1}, roles, "one Deployment for the API, one per worker build")
}

func TestEverySettingTheExampleGivesIsOneKeeperOrTheTemporalSDKReadsAndValid(t *testing.T) {
	m := load(t)
	for _, d := range m.deployments {
		c, _ := keeper(t, d)
		env := m.environment(t, d, c)
		var environ []string
		for k, v := range env {
			switch {
			case strings.HasPrefix(k, "KEEPER_"):
				environ = append(environ, k+"="+v)
			case strings.HasPrefix(k, "TEMPORAL_"):
				assert.Contains(t, testkit.TemporalEnv, k, "%s sets %s, which the SDK's envconfig does not read", d.Name, k)
			case k == "PGPASSFILE":
				// pgx, under keeper's store, reads PostgreSQL's password from it.
			default:
				t.Errorf("%s sets %s, which neither keeper, the SDK nor pgx reads", d.Name, k)
			}
		}
		notes, err := config.CheckEnvironment(environ)
		require.NoError(t, err, d.Name)
		assert.Empty(t, notes, "%s: every KEEPER_ variable is a keeper setting", d.Name)

		// keeper starts with these settings: each parses, and together they validate.
		cfg, err := config.Load(func(k string) string { return env[k] })
		require.NoError(t, err, d.Name)
		cfg.NetworkPresets(nil)
		assert.EqualValues(t, 127823, cfg.EVM.ChainID, "%s: EtherLink's current testnet, Shadownet", d.Name)
		assert.NotContains(t, cfg.StoreURL, ":@", d.Name)
		assert.NotRegexp(t, `//[^/@]*:[^/@]*@`, cfg.StoreURL, "%s: no password in the store URL (it is in the .pgpass Secret)", d.Name)

		opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: testkit.EnvMap(env), DisableFile: true})
		require.NoError(t, err, d.Name)
		assert.NotEmpty(t, opts.HostPort, "%s: the Temporal frontend from the ConfigMap", d.Name)
		assert.NotEmpty(t, opts.Namespace, d.Name)
	}
}

func TestSecretsAreMountedReadOnlyAsTheFilesKeeperReads(t *testing.T) {
	m := load(t)
	production, err := os.ReadFile("../docs/production.md")
	require.NoError(t, err)
	for _, d := range m.deployments {
		c, role := keeper(t, d)
		env := m.environment(t, d, c)
		secretVolumes := map[string]string{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				secretVolumes[v.Name] = v.Secret.SecretName
				assert.True(t, bytes.Contains(production, []byte("kubectl -n keeper create secret generic "+v.Secret.SecretName)),
					"%s: docs/production.md says how to create Secret %s", d.Name, v.Secret.SecretName)
			}
		}
		secretDirs := map[string]bool{}
		for _, vm := range c.VolumeMounts {
			if _, ok := secretVolumes[vm.Name]; ok {
				assert.True(t, vm.ReadOnly, "%s: Secret volume %s is mounted read-only", d.Name, vm.Name)
				secretDirs[vm.MountPath] = true
			}
		}
		files := []string{"KEEPER_EVM_KEY_FILE", "KEEPER_SOLANA_KEY_FILE", "PGPASSFILE"}
		files = append(files, map[string][]string{"api": {"KEEPER_API_TOKEN_FILE"}, "worker": {"KEEPER_LOG_KEY_FILE"}}[role]...)
		for _, name := range files {
			require.Contains(t, env, name, "%s reads %s", d.Name, name)
			assert.True(t, secretDirs[filepath.Dir(env[name])], "%s: %s (%s) is a file of a Secret mounted read-only", d.Name, name, env[name])
		}
		for _, name := range []string{"KEEPER_API_TOKEN", "KEEPER_EVM_KEY", "TEMPORAL_API_KEY"} {
			assert.NotContains(t, env, name, "%s: no secret in the environment", d.Name)
		}
	}
}

func TestTheGracePeriodCoversPreStopAndTheDrain(t *testing.T) {
	m := load(t)
	for _, d := range m.deployments {
		c, _ := keeper(t, d)
		env := m.environment(t, d, c)
		drain, err := time.ParseDuration(env["KEEPER_DRAIN_TIMEOUT"])
		require.NoError(t, err, "%s sets KEEPER_DRAIN_TIMEOUT", d.Name)
		var preStop time.Duration
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			require.NotNil(t, c.Lifecycle.PreStop.Sleep, "%s: the image has no shell, so preStop can only sleep", d.Name)
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		require.NotNil(t, d.Spec.Template.Spec.TerminationGracePeriodSeconds, d.Name)
		grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		// Ten seconds to spare for the store and Temporal connections' closing.
		assert.GreaterOrEqual(t, grace, preStop+drain+10*time.Second, "%s: SIGKILL comes after preStop and the drain", d.Name)
	}
}

// keeper exits non-zero when it cannot go on by itself; the kubelet starts
// it again, and a worker's readiness probe sees it unready before it exits
// (docs/production.md, Restarts).
func TestTheKubeletRestartsKeeperAndProbesReadinessWithinTheHoldBeforeExit(t *testing.T) {
	m := load(t)
	for _, d := range m.deployments {
		c, role := keeper(t, d)
		assert.Equal(t, corev1.RestartPolicyAlways, d.Spec.Template.Spec.RestartPolicy, "%s: restarted whenever it exits", d.Name)
		if role == "worker" {
			require.NotNil(t, c.ReadinessProbe, d.Name)
			period := time.Duration(c.ReadinessProbe.PeriodSeconds) * time.Second
			assert.LessOrEqual(t, period, node.FailedReadyHold, "%s: a probe comes while /readyz answers 503, before the process exits", d.Name)
		}
	}
}

func TestEachWorkerBuildIsAVersionNamedByItsImageTag(t *testing.T) {
	m := load(t)
	for _, d := range m.deployments {
		c, role := keeper(t, d)
		if role != "worker" {
			continue
		}
		name, tag, ok := strings.Cut(c.Image, ":")
		require.True(t, ok, "%s: the image has a tag", d.Name)
		assert.True(t, strings.HasSuffix(name, "keeper"), d.Name)
		env := m.environment(t, d, c)
		cfg, err := config.Load(func(k string) string { return env[k] })
		require.NoError(t, err, d.Name)
		assert.True(t, cfg.Versioning.Enabled, "%s: workers poll as a version", d.Name)
		assert.Equal(t, tag, cfg.Versioning.BuildIDOrDefault(), "%s: the build id is the image tag", d.Name)
		assert.Equal(t, "keeper-worker-"+tag, d.Name, "a build's Deployment is named by its tag, so the next build runs beside it")
		assert.Equal(t, tag, d.Spec.Selector.MatchLabels["app.kubernetes.io/version"], "%s: two builds' Deployments never select each other's pods", d.Name)
	}
}

func TestTheServiceReachesTheAPIAndTheVolumesExist(t *testing.T) {
	m := load(t)
	require.Len(t, m.services, 1)
	svc := m.services[0]
	var api *appsv1.Deployment
	for _, d := range m.deployments {
		if _, role := keeper(t, d); role == "api" {
			api = d
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claim, ok := m.claims[v.PersistentVolumeClaim.ClaimName]
				require.True(t, ok, "%s: claim %s is in the example", d.Name, v.PersistentVolumeClaim.ClaimName)
				// Every pod of every build mounts it: the signer's nonce lock is shared.
				assert.Contains(t, claim.Spec.AccessModes, corev1.ReadWriteMany)
			}
		}
	}
	require.NotNil(t, api)
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, api.Spec.Template.Labels[k], "the Service selects the API's pods")
	}
	_, isWorker := svc.Spec.Selector["app.kubernetes.io/version"]
	assert.False(t, isWorker)
	c, _ := keeper(t, api)
	require.Len(t, svc.Spec.Ports, 1)
	assert.True(t, slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == svc.Spec.Ports[0].TargetPort.String() }),
		"the Service's target port is the API's port")
}
