// Package devserver runs an embedded Temporal server (frontend, history,
// matching and worker services in-process, persisted in SQLite or
// PostgreSQL) and, optionally, the Temporal Web UI. It backs `keeper dev`,
// `keeper devserver` and tests.
package devserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const (
	defaultIP           = "127.0.0.1"
	defaultFrontendPort = 7233
	defaultNamespace    = "default"

	// DBFileName is the name of the SQLite database inside Options.DataDir.
	DBFileName = "temporal.db"

	clusterName     = "active"
	storeName       = "default"
	visibilityStore = "visibility"
	busyTimeoutMS   = "10000"

	// readyTimeout bounds Start when the caller's context has no deadline.
	readyTimeout = 2 * time.Minute
)

// Options configures Start. The zero value runs an in-memory server on
// 127.0.0.1 with a free frontend port and no UI.
type Options struct {
	// DataDir holds the SQLite database (DataDir/temporal.db). It is created
	// with its parents (mode 0700) when missing. Empty means an in-memory
	// database that lives until the process exits. Unused when DB is set.
	DataDir string
	// DB, when set, persists in PostgreSQL instead of SQLite:
	// postgres://user:password@host:5432/temporal?sslmode=require. The
	// path names the main database (default "temporal"); visibility goes
	// to the same name plus "_visibility". Missing databases are created
	// (the user needs CREATEDB, or the databases must exist), and their
	// schemas set up or upgraded to the server's version. Query parameters
	// are passed to the connection (sslmode, sslrootcert, ...).
	DB string
	// TLSCertFile and TLSKeyFile, when set, make the frontend serve TLS
	// with this PEM certificate and key. Clients then need the issuing CA
	// (TEMPORAL_TLS_SERVER_CA_CERT_PATH) unless it is publicly trusted.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile, when set with a certificate, requires every client
	// of the frontend to present a certificate signed by a CA in this PEM
	// bundle (mutual TLS).
	TLSClientCAFile string
	// IP every service binds to. Default "127.0.0.1".
	IP string
	// FrontendPort is the gRPC port clients dial. 0 picks a free port.
	// `keeper dev` passes 7233.
	FrontendPort int
	// UIPort is the Web UI port. 0 means no UI. `keeper dev` passes 8233.
	UIPort int
	// Namespace is created at start if missing. Default "default".
	Namespace string
	// SearchAttributes are custom search attributes registered on Namespace.
	// Attributes missing from an existing database are added at start.
	SearchAttributes map[string]enums.IndexedValueType
	// Logger receives the server's logs. nil discards them.
	Logger *slog.Logger
	// LogLevel is the minimum level of server logs forwarded to Logger. The
	// zero value (slog.LevelInfo) is treated as "unset" and means
	// slog.LevelWarn, because the server is chatty; to see Info logs pass
	// any level below zero, e.g. slog.LevelInfo-1 or slog.LevelDebug.
	LogLevel slog.Level
	// CodecEndpoint, when set, is the remote codec the Web UI decodes
	// payloads with (keeper's API /codec), e.g. "http://127.0.0.1:8081/codec".
	CodecEndpoint string
	// DynamicConfig overrides server dynamic config (e.g.
	// "frontend.namespaceRPS.visibility": 100). Applied after the defaults.
	DynamicConfig map[string]any
}

// Server is a running embedded Temporal server. Stop it with Stop.
type Server struct {
	frontendAddr string
	// localAddr is where this package's own clients reach the frontend
	// API: the frontend, or the plaintext internal frontend when the
	// frontend serves TLS.
	localAddr string
	uiAddr    string
	namespace string
	storage   string

	server   temporal.Server
	logLevel *slog.LevelVar
	ui       *uiserver.Server
	uiDone   chan struct{}
	release  func() // releases the claim on the data dir

	stopOnce sync.Once
	stopErr  error
}

// FrontendAddr is the gRPC host:port for SDK clients, e.g. "127.0.0.1:7233".
func (s *Server) FrontendAddr() string { return s.frontendAddr }

// UIAddr is the Web UI base URL, e.g. "http://127.0.0.1:8233", or "" when
// the UI is disabled.
func (s *Server) UIAddr() string { return s.uiAddr }

// Namespace is the namespace created at start.
func (s *Server) Namespace() string { return s.namespace }

// Storage says where the server persists, for people: "SQLite <file>",
// "SQLite in memory" or "PostgreSQL <url without password>".
func (s *Server) Storage() string { return s.storage }

// ports are the listen ports of one server instance. internalFrontend is
// 0 unless the frontend serves TLS.
type ports struct {
	frontend, frontendHTTP, internalFrontend, history, matching, worker, ui int
}

// stores are the databases the server runs on.
type stores struct {
	main, visibility *config.SQL
	shards           int32
	desc             string // for Server.Storage
}

// Start starts the server and returns once the frontend answers gRPC health
// checks, the namespace is usable, the search attributes are registered and
// (if enabled) the UI accepts connections. ctx bounds the wait; when it has
// no deadline a default of two minutes applies.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	p, err := allocatePorts(o)
	if err != nil {
		return nil, err
	}

	logLevel := new(slog.LevelVar)
	logLevel.Set(o.LogLevel)
	release, st, err := prepareStores(ctx, o, newSlogLogger(o.Logger, logLevel))
	if err != nil {
		return nil, err
	}

	srv, err := temporal.NewServer(serverOptions(o, p, st, logLevel)...)
	if err != nil {
		release()
		return nil, fmt.Errorf("devserver: creating temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		// fx has already rolled back whatever had started.
		release()
		return nil, fmt.Errorf("devserver: starting temporal server: %w", err)
	}

	s := &Server{
		frontendAddr: hostPort(o.IP, p.frontend),
		localAddr:    hostPort(o.IP, p.frontend),
		namespace:    o.Namespace,
		storage:      st.desc,
		server:       srv,
		logLevel:     logLevel,
		release:      release,
	}
	if p.internalFrontend != 0 {
		s.localAddr = hostPort(o.IP, p.internalFrontend)
	}
	if p.ui != 0 {
		s.uiAddr = "http://" + hostPort(o.IP, p.ui)
		s.startUI(o, p)
	}

	if err := s.waitReady(ctx, o); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops the UI and then the server. It is safe to call more than once
// and on a nil Server.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		// Shutting down makes the server's internal clients log connection
		// warnings, and the server never stops some of its system workers
		// (see dynamicConfig), which keep retrying the closed frontend. Only
		// errors are worth forwarding from here on.
		if s.logLevel.Level() < slog.LevelError {
			s.logLevel.Set(slog.LevelError)
		}
		if s.ui != nil {
			s.ui.Stop()
			select {
			case <-s.uiDone:
			case <-time.After(5 * time.Second):
			}
		}
		s.stopErr = s.server.Stop()
		s.release()
	})
	return s.stopErr
}

func (o *Options) normalize() error {
	o.IP = cmp.Or(o.IP, defaultIP)
	if net.ParseIP(o.IP) == nil {
		return fmt.Errorf("devserver: invalid IP %q", o.IP)
	}
	if o.FrontendPort < 0 || o.FrontendPort > 65535 {
		return fmt.Errorf("devserver: invalid frontend port %d", o.FrontendPort)
	}
	if o.UIPort < 0 || o.UIPort > 65535 {
		return fmt.Errorf("devserver: invalid UI port %d", o.UIPort)
	}
	if o.UIPort != 0 && o.UIPort == o.FrontendPort {
		return fmt.Errorf("devserver: UI port and frontend port are both %d", o.UIPort)
	}
	if o.DataDir != "" {
		dir, err := filepath.Abs(o.DataDir)
		if err != nil {
			return fmt.Errorf("devserver: data dir: %w", err)
		}
		o.DataDir = dir
	}
	o.Namespace = cmp.Or(o.Namespace, defaultNamespace)
	if err := o.checkTLS(); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.LogLevel = cmp.Or(o.LogLevel, slog.LevelWarn)
	return nil
}

// allocatePorts checks the fixed ports are free and picks free ports for the
// rest. Picked ports are released before the server binds them, so another
// process could grab one in between; that window is tiny on a dev machine.
func allocatePorts(o Options) (ports, error) {
	var p ports
	used := map[int]bool{}
	if o.FrontendPort != 0 {
		if err := checkPortFree(o.IP, o.FrontendPort); err != nil {
			return p, fmt.Errorf("devserver: frontend port: %w", err)
		}
		used[o.FrontendPort] = true
	}
	if o.UIPort != 0 {
		// The UI server exits the process if it cannot bind, so check first.
		if err := checkPortFree(o.IP, o.UIPort); err != nil {
			return p, fmt.Errorf("devserver: UI port: %w", err)
		}
		used[o.UIPort] = true
	}
	p.frontend, p.ui = o.FrontendPort, o.UIPort
	picked := []*int{&p.frontend, &p.frontendHTTP, &p.history, &p.matching, &p.worker}
	if o.tlsEnabled() {
		picked = append(picked, &p.internalFrontend)
	}
	for _, dst := range picked {
		if *dst != 0 {
			continue
		}
		port, err := freePort(o.IP, used)
		if err != nil {
			return p, fmt.Errorf("devserver: picking a free port: %w", err)
		}
		used[port] = true
		*dst = port
	}
	return p, nil
}

func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", hostPort(ip, port))
	if err != nil {
		return fmt.Errorf("%s is not available: %w", hostPort(ip, port), err)
	}
	return l.Close()
}

func freePort(ip string, used map[int]bool) (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", hostPort(ip, 0))
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, err
		}
		if !used[port] {
			return port, nil
		}
	}
	return 0, errors.New("no free port found")
}

func hostPort(ip string, port int) string {
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

var (
	memDBSeq atomic.Int64

	activeMu sync.Mutex
	activeDB = map[string]bool{}
)

// claimDatabase makes sure only one Server in this process uses a database
// (a data dir, or a PostgreSQL database named by its address and name) at a
// time: two servers on one database would fight over the history shards.
// (A second process is kept out by the frontend port, which `keeper dev`
// always fixes.)
func claimDatabase(what, key string) (release func(), err error) {
	if key == "" {
		return func() {}, nil
	}
	activeMu.Lock()
	defer activeMu.Unlock()
	if activeDB[key] {
		return nil, fmt.Errorf("devserver: %s is already used by a running server in this process", what)
	}
	activeDB[key] = true
	return func() {
		activeMu.Lock()
		delete(activeDB, key)
		activeMu.Unlock()
	}, nil
}

// prepareStores claims the database (SQLite or PostgreSQL), readies its
// schema and creates the namespace when missing. release gives up the claim.
func prepareStores(ctx context.Context, o Options, logger slogLogger) (release func(), st stores, err error) {
	var target postgresTarget
	if o.DB != "" {
		if target, err = parsePostgresURL(o.DB); err != nil {
			return nil, st, err
		}
		release, err = claimDatabase("database "+target.claimKey(), target.claimKey())
	} else {
		release, err = claimDatabase("data dir "+o.DataDir, o.DataDir)
	}
	if err != nil {
		return nil, st, err
	}
	if o.DB != "" {
		st.main, st.visibility, err = preparePostgres(ctx, target, logger)
		st.shards, st.desc = pgHistoryShards, "PostgreSQL "+target.String()
	} else {
		st.main, err = prepareDatabase(o)
		st.visibility, st.shards, st.desc = st.main, 1, "SQLite in memory"
		if o.DataDir != "" {
			st.desc = "SQLite " + filepath.Join(o.DataDir, DBFileName)
		}
	}
	if err == nil {
		err = createNamespace(o, st.main)
	}
	if err != nil {
		release()
		return nil, st, err
	}
	return release, st, nil
}

// prepareDatabase builds the SQLite config and creates the schema when the
// database file is new.
//
// Note: the server's SQLite plugin keeps one process-wide handle per DSN and
// never closes it, even after the server stops. A later Start on the same
// DataDir builds the identical DSN and so reuses that handle.
func prepareDatabase(o Options) (*config.SQL, error) {
	conf := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		MaxConns:     1,
		MaxIdleConns: 1,
	}
	if o.DataDir == "" {
		// A named shared-cache in-memory database, unique per Start. The
		// plugin creates the schema itself in memory mode.
		conf.DatabaseName = fmt.Sprintf("keeper-devserver-%d-%d", os.Getpid(), memDBSeq.Add(1))
		conf.ConnectAttributes = map[string]string{
			"mode":  "memory",
			"cache": "shared",
		}
	} else {
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("devserver: creating data dir: %w", err)
		}
		conf.DatabaseName = filepath.Join(o.DataDir, DBFileName)
		// Keys other than SQLite URI parameters (mode, cache, ...) are turned
		// into `_pragma=key=value` DSN parameters by the plugin.
		conf.ConnectAttributes = map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "NORMAL",
			"busy_timeout": busyTimeoutMS,
		}
		fresh, err := isNewDBFile(conf.DatabaseName)
		if err != nil {
			return nil, err
		}
		if fresh {
			if err := sqliteschema.SetupSchema(conf); err != nil {
				removeDBFiles(conf.DatabaseName)
				return nil, fmt.Errorf("devserver: creating schema in %s: %w", conf.DatabaseName, err)
			}
		}
	}
	return conf, nil
}

// createNamespace writes the namespace into the database before the server
// starts, so it is served from the first request. The server's helper for
// this is named for SQLite but works on any SQL plugin: the search
// attribute columns are the same in every SQL visibility schema.
func createNamespace(o Options, conf *config.SQL) error {
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return fmt.Errorf("devserver: namespace config: %w", err)
	}
	// CreateNamespaces skips namespaces that already exist (search
	// attributes added later are registered by waitReady instead).
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return fmt.Errorf("devserver: creating namespace %q: %w", o.Namespace, err)
	}
	return nil
}

// isNewDBFile reports whether the schema must be created: the file is
// missing, or empty (SQLite creates a 0-byte file before the first write).
func isNewDBFile(path string) (bool, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("devserver: database file: %w", err)
	case fi.IsDir():
		return false, fmt.Errorf("devserver: database file %s is a directory", path)
	}
	return fi.Size() == 0, nil
}

func removeDBFiles(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suffix)
	}
}

func serverOptions(o Options, p ports, st stores, logLevel *slog.LevelVar) []temporal.ServerOption {
	self := func(port int) static.Hosts { return static.SingleLocalHost(hostPort(o.IP, port)) }
	services := slices.Clone(temporal.DefaultServices)
	hosts := map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: self(p.frontend),
		primitives.HistoryService:  self(p.history),
		primitives.MatchingService: self(p.matching),
		primitives.WorkerService:   self(p.worker),
	}
	if p.internalFrontend != 0 {
		services = append(services, string(primitives.InternalFrontendService))
		hosts[primitives.InternalFrontendService] = self(p.internalFrontend)
	}
	return []temporal.ServerOption{
		temporal.WithConfig(serverConfig(o, p, st)),
		temporal.ForServices(services),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(newSlogLogger(o.Logger, logLevel)),
		temporal.WithDynamicConfigClient(dynamicConfig(o)),
	}
}

func serverConfig(o Options, p ports, st stores) *config.Config {
	frontendAddr := hostPort(o.IP, p.frontend)
	svc := func(grpcPort, httpPort int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = grpcPort
		s.RPC.HTTPPort = httpPort
		s.RPC.BindOnIP = o.IP
		return s
	}

	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = o.IP
	c.Persistence.DefaultStore = storeName
	c.Persistence.VisibilityStore = storeName
	c.Persistence.NumHistoryShards = st.shards
	c.Persistence.DataStores = map[string]config.DataStore{storeName: {SQL: st.main}}
	if st.visibility != st.main {
		c.Persistence.VisibilityStore = visibilityStore
		c.Persistence.DataStores[visibilityStore] = config.DataStore{SQL: st.visibility}
	}
	c.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontendAddr,
				HTTPAddress:            hostPort(o.IP, p.frontendHTTP),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): svc(p.frontend, p.frontendHTTP),
		string(primitives.HistoryService):  svc(p.history, 0),
		string(primitives.MatchingService): svc(p.matching, 0),
		string(primitives.WorkerService):   svc(p.worker, 0),
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	if o.tlsEnabled() {
		c.Global.TLS = frontendTLS(o)
		// With an internal frontend the system workers use it, and the
		// public client must be left unset.
		c.Services[string(primitives.InternalFrontendService)] = svc(p.internalFrontend, 0)
	} else {
		c.PublicClient.HostPort = frontendAddr
	}
	return &c
}

func dynamicConfig(o Options) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		// One worker process on a dev machine: a single task queue partition
		// avoids tasks waiting on partitions nobody polls.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The UI lists and counts workflows a lot; the default of 10 RPS
		// throttles it.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// The default host-level mutable state cache (128k entries) is sized
		// for production hosts. Entries of finished workflows stay until
		// evicted (an hour's TTL), so the cache grows with every workflow run
		// until it is full: at 8,192 entries that was ~16 MB of heap a minute
		// for ten minutes of `keeper bench` at 400 evidence/s. 512 holds every
		// batch in flight at full load (about 70) with room to spare.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 512,
		// The XDC cache keeps recent history blobs for cross-cluster
		// replication, which a single embedded cluster never does; at its
		// default 8 MiB bound (counted in blob bytes, more on the heap) it was
		// most of the server's heap growth over ten minutes of `keeper bench`.
		dynamicconfig.XDCCacheMaxSizeBytes.Key(): 1 << 20,
		// Background scavengers for long-lived production clusters. The
		// server also never stops their SDK workers on shutdown, so each
		// Start/Stop cycle in a process would leak them.
		dynamicconfig.TaskQueueScannerEnabled.Key(): false,
		dynamicconfig.HistoryScannerEnabled.Key():   false,
	}
	for k, v := range o.DynamicConfig {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return dc
}

func (s *Server) startUI(o Options, p ports) {
	s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                o.IP,
		Port:                p.ui,
		TemporalGRPCAddress: s.localAddr,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
		Codec:               uiconfig.Codec{Endpoint: o.CodecEndpoint},
	}))
	s.uiDone = make(chan struct{})
	ui, logger := s.ui, o.Logger
	go func() {
		defer close(s.uiDone)
		// Start blocks until Stop. On a bind failure the UI library exits
		// the process itself; allocatePorts checked the port beforehand.
		if err := ui.Start(); err != nil {
			logger.Error("devserver: UI server failed", "error", err)
		}
	}()
}

// waitReady polls until the frontend serves the namespace, then registers
// missing search attributes and waits for the UI.
func (s *Server) waitReady(ctx context.Context, o Options) error {
	var c sdkclient.Client
	err := poll(ctx, func() error {
		attemptCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if c == nil {
			var err error
			c, err = sdkclient.DialContext(attemptCtx, sdkclient.Options{
				HostPort:  s.localAddr,
				Namespace: o.Namespace,
				Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
			})
			if err != nil {
				return err
			}
		}
		if _, err := c.CheckHealth(attemptCtx, &sdkclient.CheckHealthRequest{}); err != nil {
			return err
		}
		if _, err := c.WorkflowService().DescribeNamespace(attemptCtx, &workflowservice.DescribeNamespaceRequest{Namespace: o.Namespace}); err != nil {
			return err
		}
		if s.localAddr != s.frontendAddr {
			// The TLS frontend is the same service as the internal one;
			// that it accepts connections is enough.
			conn, err := (&net.Dialer{}).DialContext(attemptCtx, "tcp", s.frontendAddr)
			if err != nil {
				return err
			}
			return conn.Close()
		}
		return nil
	})
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return fmt.Errorf("devserver: frontend at %s not ready: %w", s.frontendAddr, err)
	}

	if err := ensureSearchAttributes(ctx, c, o.Namespace, o.SearchAttributes); err != nil {
		return err
	}

	if s.ui != nil {
		err := poll(ctx, func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.uiAddr+"/healthz", nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			return nil
		})
		if err != nil {
			return fmt.Errorf("devserver: UI at %s not ready: %w", s.uiAddr, err)
		}
	}
	return nil
}

// ensureSearchAttributes registers attributes missing on the namespace. A
// new database gets them at namespace creation; this covers databases
// created by an earlier version that registered fewer attributes.
func ensureSearchAttributes(ctx context.Context, c sdkclient.Client, ns string, want map[string]enums.IndexedValueType) error {
	if len(want) == 0 {
		return nil
	}
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return fmt.Errorf("devserver: listing search attributes: %w", err)
	}
	missing := map[string]enums.IndexedValueType{}
	for name, typ := range want {
		have, ok := list.GetCustomAttributes()[name]
		if !ok {
			if _, sys := list.GetSystemAttributes()[name]; sys {
				return fmt.Errorf("devserver: search attribute %q is a system attribute", name)
			}
			missing[name] = typ
			continue
		}
		if have != typ {
			return fmt.Errorf("devserver: search attribute %q is registered as %s, want %s (the database in the data dir was created with a different type; delete it to start over)", name, have, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        ns,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("devserver: adding search attributes: %w", err)
	}
	// The namespace registry of the other services picks up the new aliases
	// on its next refresh (every 2s by default).
	select {
	case <-time.After(3 * time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// poll calls f until it succeeds or ctx is done, returning f's last error.
func poll(ctx context.Context, f func() error) error {
	const interval = 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}
