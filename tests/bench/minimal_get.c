/* The baseline processes of the `swarm status` benchmarks: the least a nats.c
 * program can do to read one key (connect, bind the bucket, one get, exit),
 * or every key (KEY "--all": a watch of the whole bucket, to its end); and
 * of `swarm log`: the last message of one subject of a stream, by a direct
 * get (BUCKET "--last-of": KEY is STREAM:SUBJECT).
 * Usage: minimal_get URL BUCKET KEY|--all, or minimal_get URL --last-of STREAM:SUBJECT */
#include <nats/nats.h>
#include <stdio.h>
#include <string.h>

/* Reads every entry of the bucket once (deletes skipped); returns how many. */
static natsStatus watch_all(kvStore* kv, int* count, long long* bytes) {
  kvWatcher* w = NULL;
  kvWatchOptions options;
  kvWatchOptions_Init(&options);
  options.IgnoreDeletes = true;
  natsStatus s = kvStore_WatchAll(&w, kv, &options);
  while (s == NATS_OK) {
    kvEntry* e = NULL;
    s = kvWatcher_Next(&e, w, 10000);
    if (s != NATS_OK || e == NULL) break;
    ++*count;
    *bytes += kvEntry_ValueLen(e);
    kvEntry_Destroy(e);
  }
  kvWatcher_Destroy(w);
  return s;
}

int main(int argc, char** argv) {
  natsConnection* nc = NULL;
  jsCtx* js = NULL;
  kvStore* kv = NULL;
  kvEntry* entry = NULL;
  natsStatus s;
  if (argc != 4) {
    fprintf(stderr, "usage: minimal_get URL BUCKET KEY\n");
    return 2;
  }
  s = natsConnection_ConnectTo(&nc, argv[1]);
  if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, NULL);
  if (s == NATS_OK && strcmp(argv[2], "--last-of") == 0) {
    char stream[256];
    const char* colon = strchr(argv[3], ':');
    natsMsg* msg = NULL;
    jsDirectGetMsgOptions get;
    if (colon == NULL || (size_t)(colon - argv[3]) >= sizeof stream) {
      fprintf(stderr, "usage: minimal_get URL --last-of STREAM:SUBJECT\n");
      return 2;
    }
    memcpy(stream, argv[3], (size_t)(colon - argv[3]));
    stream[colon - argv[3]] = '\0';
    jsDirectGetMsgOptions_Init(&get);
    get.LastBySubject = colon + 1;
    s = js_DirectGetMsg(&msg, js, stream, NULL, &get);
    if (s == NATS_OK) printf("%d bytes at sequence %llu\n", natsMsg_GetDataLength(msg),
                             (unsigned long long)natsMsg_GetSequence(msg));
    natsMsg_Destroy(msg);
  } else if (s == NATS_OK) s = js_KeyValue(&kv, js, argv[2]);
  if (s == NATS_OK && strcmp(argv[2], "--last-of") == 0) {
  } else if (s == NATS_OK && strcmp(argv[3], "--all") == 0) {
    int count = 0;
    long long bytes = 0;
    s = watch_all(kv, &count, &bytes);
    if (s == NATS_OK) printf("%d entries, %lld bytes\n", count, bytes);
  } else {
    if (s == NATS_OK) s = kvStore_Get(&entry, kv, argv[3]);
    if (s == NATS_OK) printf("%d bytes at revision %llu\n", kvEntry_ValueLen(entry),
                             (unsigned long long)kvEntry_Revision(entry));
  }
  if (s != NATS_OK) fprintf(stderr, "minimal_get: %s\n", natsStatus_GetText(s));
  kvEntry_Destroy(entry);
  kvStore_Destroy(kv);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return s == NATS_OK ? 0 : 1;
}
