package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The environment check (docs/configuration.md): a KEEPER_ variable keeper
// does not read must not pass unnoticed. The former settings that keeper
// names otherwise (KEEPER_PROVIDER, KEEPER_HTTP_PORT) refuse the start,
// naming the setting to use;
// any other unknown name is reported with the known name nearest to it.
// Kubernetes injects service links for every Service in the namespace
// (KEEPER_API_SERVICE_HOST, KEEPER_API_PORT_8081_TCP, … for a Service named
// keeper-api): those are no settings, and only noted at debug level.

// EnvNote is one KEEPER_ variable keeper does not read.
type EnvNote struct {
	Name    string
	Message string
	Debug   bool // a Kubernetes service link: not worth a warning
}

// otherNames are KEEPER_ variables read outside the knob table: the API
// client commands' (`keeper submit`, `status`, `receipt`), `keeper
// verify`'s pinned log key and `keeper witness`'s settings.
var otherNames = []string{"KEEPER_API_URL", "KEEPER_LOG_PUBLIC_KEY",
	"KEEPER_WITNESS_ADDR", "KEEPER_WITNESS_DB", "KEEPER_WITNESS_KEY_FILE", "KEEPER_WITNESS_LOGS"}

// providerChains maps the former KEEPER_PROVIDER's values to KEEPER_CHAINS.
var providerChains = map[string]string{"stub": "stub", "etherlink": "etherlink", "solana": "solana", "multi": "etherlink,solana"}

var (
	serviceHost  = regexp.MustCompile(`^KEEPER(_[A-Z0-9_]+)?_SERVICE_(HOST|PORT)(_[A-Z0-9_]+)?$`)
	servicePort  = regexp.MustCompile(`^KEEPER(_[A-Z0-9_]+)?_PORT$`)
	servicePortN = regexp.MustCompile(`^KEEPER(_[A-Z0-9_]+)?_PORT_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?$`)
	serviceURL   = regexp.MustCompile(`^(tcp|udp|sctp)://`)
)

// CheckEnvironment reads environ (as os.Environ gives it) for KEEPER_
// variables that are no keeper setting. The former KEEPER_PROVIDER and
// KEEPER_HTTP_PORT are refused with the setting to use instead (all of them
// in one error); every other unknown name comes back as a note.
func CheckEnvironment(environ []string) ([]EnvNote, error) {
	var c Config
	known := map[string]bool{}
	var names []string
	for _, k := range c.Knobs() {
		known[k.Env] = true
		names = append(names, k.Env)
	}
	for _, n := range otherNames {
		known[n] = true
		names = append(names, n)
	}
	for _, f := range formerNames {
		known[f.env] = true // Load reads it and says it is deprecated
		names = append(names, f.env)
	}
	var notes []EnvNote
	var refused []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "KEEPER_") || known[name] || value == "" {
			continue // an empty value sets nothing, as in Load
		}
		link := serviceHost.MatchString(name) || servicePortN.MatchString(name) ||
			servicePort.MatchString(name) && serviceURL.MatchString(value)
		switch {
		case link:
			notes = append(notes, EnvNote{Name: name, Debug: true,
				Message: name + " looks like a Kubernetes service link, not a keeper setting; ignored"})
		case name == "KEEPER_PROVIDER":
			want, ok := providerChains[strings.ToLower(strings.TrimSpace(value))]
			if !ok {
				want = "<etherlink, solana or stub, comma-separated>"
			}
			refused = append(refused, fmt.Errorf("KEEPER_PROVIDER is not a keeper setting: set KEEPER_CHAINS=%s instead, and unset KEEPER_PROVIDER", want))
		case name == "KEEPER_HTTP_PORT":
			port := strings.TrimSpace(value)
			refused = append(refused, fmt.Errorf("KEEPER_HTTP_PORT is not a keeper setting: set KEEPER_HTTP_ADDR=127.0.0.1:%s (0.0.0.0:%s for every interface) for the API, or KEEPER_HEALTH_ADDR for `keeper worker`'s /health and /readyz, and unset KEEPER_HTTP_PORT", port, port))
		default:
			notes = append(notes, EnvNote{Name: name,
				Message: fmt.Sprintf("%s is not a keeper setting and is ignored; the nearest one is %s", name, nearest(name, names))})
		}
	}
	return notes, errors.Join(refused...)
}

// nearest is the name in names at the least edit distance from name (the
// first of those, in names' order); nearest a former name, the name that
// setting has now.
func nearest(name string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(name, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	for _, f := range formerNames {
		if f.env == best {
			return f.current
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes: the
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
