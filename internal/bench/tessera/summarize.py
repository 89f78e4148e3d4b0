import json,sys,os
d=sys.argv[1]
print("| backend | settings | flat out entries/s | 1000/s: Add→index p50/p99 ms | 1000/s: Add→published checkpoint p50/p99/max ms | checkpoints seen (1000/s phase) | bytes on disk / entry (after 200k) |")
print("|---|---|---|---|---|---|---|")
for b in ["sqlite","sqlite-every100ms","pg","pg-every100ms","posix","posix-cp100ms","mysql"]:
    p=os.path.join(d,b+".json")
    if not os.path.exists(p) or os.path.getsize(p)==0: continue
    r=json.load(open(p))
    f,s=r["phases"][0],r["phases"][1]
    print(f"| {b} | {r['settings']} | {f['entries_per_s']:,.0f} | {s['add_to_index_p50_ms']:.1f} / {s['add_to_index_p99_ms']:.1f} | {s['add_to_checkpoint_p50_ms']:.0f} / {s['add_to_checkpoint_p99_ms']:.0f} / {s['add_to_checkpoint_max_ms']:.0f} | {s['checkpoints_seen']} | {r['disk_bytes_per_entry_after_flat']:.0f} ({r['disk_how']}) | gapfree={f['indexes_gap_free_in_add_order'] and s['indexes_gap_free_in_add_order']} flat-secs={f['seconds']:.1f}")
