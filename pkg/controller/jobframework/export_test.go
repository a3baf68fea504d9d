package jobframework

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SyncForTest syncs the object key ("namespace/name") of the adapter at index kind, as a
// worker does once the item is dequeued; the external tests (which import the adapters, that
// import this package) drive the reconciler with it.
func (r *Reconciler) SyncForTest(ctx context.Context, kind int, key string) error {
	return r.sync(ctx, item{kind: kind, key: key})
}

// SetSyncedForTest sets what Run sets from Options.Synced.
func (r *Reconciler) SetSyncedForTest(f func(schema.GroupVersionKind, Object)) {
	r.afterSync = f
}
