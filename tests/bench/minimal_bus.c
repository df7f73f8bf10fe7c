/* The baseline processes of the message benchmarks: the least a nats.c
 * program does for what `swarm send`, `inbox`, `ask` and `blob put` do.
 *   minimal_bus URL publish SUBJECT BYTES       one publish with its ack
 *   minimal_bus URL read SUBJECT N              an ordered read of N messages from the start
 *   minimal_bus URL ask SUBJECT REPLY_SUBJECT   listen on REPLY_SUBJECT, publish a question
 *                                               (swarm.message.v1, from its last token), await one reply
 *   minimal_bus URL chunks SUBJECT FILE         FILE in 128 KiB chunks, published asynchronously */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static natsStatus publish(jsCtx* js, const char* subject, const char* data, int len, const char* id) {
  jsPubOptions o;
  jsPubAck* ack = NULL;
  jsErrCode code = 0;
  jsPubOptions_Init(&o);
  o.MsgId = id;
  natsStatus s = js_Publish(&ack, js, subject, data, len, &o, &code);
  jsPubAck_Destroy(ack);
  return s;
}

static natsStatus ordered(natsSubscription** sub, jsCtx* js, const char* subject, int new_only) {
  jsSubOptions o;
  jsErrCode code = 0;
  jsSubOptions_Init(&o);
  o.Ordered = true;
  o.Config.DeliverPolicy = new_only ? js_DeliverNew : js_DeliverAll;
  return js_SubscribeSync(sub, js, subject, NULL, &o, &code);
}

int main(int argc, char** argv) {
  natsConnection* nc = NULL;
  jsCtx* js = NULL;
  natsSubscription* sub = NULL;
  natsStatus s;
  char id[64];
  if (argc != 5) {
    fprintf(stderr, "usage: minimal_bus URL publish|read|ask|chunks ARG ARG\n");
    return 2;
  }
  snprintf(id, sizeof id, "raw-%ld-%d", (long)getpid(), rand());
  s = natsConnection_ConnectTo(&nc, argv[1]);
  if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, NULL);
  if (s == NATS_OK && strcmp(argv[2], "publish") == 0) {
    int len = atoi(argv[4]);
    char* data = malloc((size_t)len);
    memset(data, 'x', (size_t)len);
    s = publish(js, argv[3], data, len, id);
    free(data);
  } else if (s == NATS_OK && strcmp(argv[2], "read") == 0) {
    int n = atoi(argv[4]), got = 0;
    s = ordered(&sub, js, argv[3], 0);
    while (s == NATS_OK && got < n) {
      natsMsg* m = NULL;
      s = natsSubscription_NextMsg(&m, sub, 10000);
      if (s == NATS_OK) ++got;
      natsMsg_Destroy(m);
    }
    if (s == NATS_OK) printf("%d messages\n", got);
  } else if (s == NATS_OK && strcmp(argv[2], "ask") == 0) {
    const char* from = strrchr(argv[4], '.') + 1;
    char question[512];
    int len = snprintf(question, sizeof question,
                       "{\"schema\":\"swarm.message.v1\",\"id\":\"%s\",\"from\":\"%s\",\"to\":\"lead\",\"type\":\"\","
                       "\"corr\":\"c-%s\",\"reply_to\":\"\",\"body\":\"may I?\",\"blob\":null}",
                       id, from, id);
    s = ordered(&sub, js, argv[4], 1);
    if (s == NATS_OK) s = publish(js, argv[3], question, len, id);
    if (s == NATS_OK) {
      natsMsg* m = NULL;
      s = natsSubscription_NextMsg(&m, sub, 10000);
      natsMsg_Destroy(m);
    }
  } else if (s == NATS_OK && strcmp(argv[2], "chunks") == 0) {
    FILE* f = fopen(argv[4], "rb");
    static char chunk[128 * 1024];
    size_t n;
    jsCtx* async = NULL;
    jsOptions o;
    jsOptions_Init(&o);
    o.PublishAsync.MaxPending = 64;
    s = f == NULL ? NATS_ERR : natsConnection_JetStream(&async, nc, &o);
    while (s == NATS_OK && (n = fread(chunk, 1, sizeof chunk, f)) > 0) s = js_PublishAsync(async, argv[3], chunk, (int)n, NULL);
    if (s == NATS_OK) {
      jsPubOptions c;
      jsPubOptions_Init(&c);
      c.MaxWait = 60000;
      s = js_PublishAsyncComplete(async, &c);
    }
    if (f != NULL) fclose(f);
    jsCtx_Destroy(async);
  } else if (s == NATS_OK) {
    s = NATS_INVALID_ARG;
  }
  if (s != NATS_OK) fprintf(stderr, "minimal_bus: %s\n", natsStatus_GetText(s));
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return s == NATS_OK ? 0 : 1;
}
