// The official OFREP provider for Node (on the OpenFeature server SDK) and the official
// OFREP core client, against the service. Input (argv[2], JSON): baseUrl, apiKey,
// tenantId, flags: [[key, type, default]]. Output (stdout, JSON): each flag's details,
// and the bulk evaluation: its first answer, then the answer to its ETag (a 304).
import { OpenFeature } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPApi } from '@openfeature/ofrep-core';

const input = JSON.parse(process.argv[2]);
const headers = [['X-API-Key', input.apiKey]];
await OpenFeature.setProviderAndWait(new OFREPProvider({ baseUrl: input.baseUrl, headers }));
const client = OpenFeature.getClient();
const context = input.tenantId === null ? {} : { targetingKey: input.tenantId };
const details = {};
for (const [key, type, fallback] of input.flags) {
  const method = {
    boolean: 'getBooleanDetails', string: 'getStringDetails',
    number: 'getNumberDetails', object: 'getObjectDetails',
  }[type];
  const result = await client[method](key, fallback, context);
  details[key] = {
    value: result.value, reason: result.reason, errorCode: result.errorCode ?? null,
    flagMetadata: result.flagMetadata,
  };
}
const api = new OFREPApi(input.baseUrl);
const first = await api.postBulkEvaluateFlags({ context }, { headers });
const etag = first.httpResponse.headers.get('ETag');
const again = await api.postBulkEvaluateFlags(
  { context }, { headers: [...headers, ['If-None-Match', etag]] },
);
await OpenFeature.close();
console.log(JSON.stringify({
  details,
  bulk: { status: first.httpStatus, etag, flags: first.value?.flags ?? null },
  bulkAgain: { status: again.httpStatus },
}));
