package testkit

// TemporalEnv are the variables the Temporal SDK's envconfig reads (v1.0.2):
// a deployment file that sets another TEMPORAL_ variable sets it for nothing.
var TemporalEnv = []string{
	"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_CLIENT_AUTHORITY", "TEMPORAL_TLS",
	"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_CLIENT_KEY_DATA",
	"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_DATA", "TEMPORAL_TLS_SERVER_NAME",
	"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "TEMPORAL_CODEC_ENDPOINT", "TEMPORAL_CODEC_AUTH", "TEMPORAL_CONFIG_FILE", "TEMPORAL_PROFILE",
}

// EnvMap is an environment held in a map, for code that looks variables up
// through an interface (envconfig's EnvLookup) rather than in os.Environ.
type EnvMap map[string]string

// Environ lists the variables as KEY=value.
func (e EnvMap) Environ() []string {
	out := make([]string, 0, len(e))
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

// LookupEnv returns k's value and whether it is set.
func (e EnvMap) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }
