package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/tcpfault"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// throughProxy opens a fresh PostgreSQL store whose connections pass
// through a proxy the test can cut, as if the server stopped.
func throughProxy(t *testing.T) (*store.Store, *tcpfault.Proxy) {
	t.Helper()
	u, err := url.Parse(storetest.PostgresURL(t))
	require.NoError(t, err)
	p, err := tcpfault.Start(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	return storetest.Open(t, u.String()), p
}

func someEvidence(i int) store.NewEvidence {
	return store.NewEvidence{Digest: sha256.Sum256(fmt.Appendf(nil, "unavailable %d", i)), Chains: []string{"stub"}, Priority: 5}
}

func TestAPostgreSQLStoreCutOffAnswersUnavailableAndWorksAgainOnceBack(t *testing.T) {
	st, proxy := throughProxy(t)
	defer st.Close()
	ctx := context.Background()
	before, _, err := st.InsertEvidence(ctx, someEvidence(0))
	require.NoError(t, err)

	proxy.Cut()
	_, _, err = st.InsertEvidence(ctx, someEvidence(1))
	assert.True(t, store.Unavailable(err), "insert: %v", err)
	_, err = st.GetEvidence(ctx, before.ID)
	assert.True(t, store.Unavailable(err), "read: %v", err)
	_, err = st.PendingCount(ctx)
	assert.True(t, store.Unavailable(err), "count: %v", err)
	res, err := st.InsertEvidenceBatch(ctx, []store.NewEvidence{someEvidence(2), someEvidence(3)})
	if err == nil {
		for _, r := range res {
			assert.True(t, store.Unavailable(r.Err), "bulk insert: %v", r.Err)
		}
	} else {
		assert.True(t, store.Unavailable(err), "bulk insert: %v", err)
	}

	require.NoError(t, proxy.Restore())
	require.Eventually(t, func() bool {
		_, _, err := st.InsertEvidence(ctx, someEvidence(4))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "intake works again")
	got, err := st.GetEvidence(ctx, before.ID)
	require.NoError(t, err)
	assert.Equal(t, before.Digest, got.Digest)
}

func TestAnSQLiteFileLockedByAnotherWriterIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keeper.db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_txlock=immediate")
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	holder, other := open(), open()
	_, err := holder.Exec(`CREATE TABLE t (x INTEGER)`)
	require.NoError(t, err)
	tx, err := holder.Begin()
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec(`INSERT INTO t VALUES (1)`)
	require.NoError(t, err)

	_, err = other.Exec(`INSERT INTO t VALUES (2)`)
	require.Error(t, err)
	assert.True(t, store.Unavailable(err), "%v", err)
}

func TestAConnectionRefusedIsUnavailableAndRefusedWorkIsNot(t *testing.T) {
	_, err := store.OpenPostgres(context.Background(), "postgres://keeper@127.0.0.1:1/keeper?connect_timeout=2")
	require.Error(t, err)
	assert.True(t, store.Unavailable(err), "%v", err)

	for _, err := range []error{
		nil, store.ErrNotFound, store.ErrConflict, sql.ErrNoRows, context.Canceled, context.DeadlineExceeded,
		&pgconn.PgError{Code: "42601", Message: "syntax error"},
		&pgconn.PgError{Code: "23505", Message: "duplicate key"},
		errors.New("chain \"a,b\" is not a chain name"),
	} {
		assert.False(t, store.Unavailable(err), "%v", err)
	}
	for _, err := range []error{
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"},
		&pgconn.PgError{Code: "08006", Message: "connection failure"},
		&pgconn.PgError{Code: "53300", Message: "too many connections"},
		fmt.Errorf("count pending evidence: %w", store.ErrUnavailable),
	} {
		assert.True(t, store.Unavailable(fmt.Errorf("store: insert evidence: %w", err)), "%v", err)
	}
}
