/* The baseline process of the `swarm status` benchmark: the least a nats.c
 * program can do to read one key: connect, bind the bucket, one get, exit.
 * Usage: minimal_get URL BUCKET KEY */
#include <nats/nats.h>
#include <stdio.h>

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
  if (s == NATS_OK) s = js_KeyValue(&kv, js, argv[2]);
  if (s == NATS_OK) s = kvStore_Get(&entry, kv, argv[3]);
  if (s == NATS_OK) printf("%d bytes at revision %llu\n", kvEntry_ValueLen(entry),
                           (unsigned long long)kvEntry_Revision(entry));
  else fprintf(stderr, "minimal_get: %s\n", natsStatus_GetText(s));
  kvEntry_Destroy(entry);
  kvStore_Destroy(kv);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return s == NATS_OK ? 0 : 1;
}
