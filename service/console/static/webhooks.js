// Webhooks with their delivery stats and the test button, and the dead-letter queue
// (failed deliveries) with retry and retry-all. Secrets are never shown: the API returns
// them only when a webhook is created or its secret rotated.

import { get, nameOf, post, remember } from "./api.js";
import { badge, confirmButton, fill, h, jsonText, messageBox, shortId, table, tenantRef, when } from "./dom.js";

const DLQ_PAGE = 25;

function statsLine(stats) {
  return h("span.stats", {},
    ["total", "pending", "success", "failed"].map((name) =>
      h(`span.stat.stat-${name}`, { title: name }, `${name} ${stats[name]}`)));
}

// The endpoint's own health from the webhook answer: success rate, last success, last failure.
function healthLine(stats) {
  if (!stats) return null;
  const rate = stats.success_rate === null ? "no attempts yet" : `${Math.round(stats.success_rate * 1000) / 10}% succeeded`;
  return h("div.hint.health", {},
    h("span.success-rate", {}, rate),
    h("span", {}, ` · last success ${stats.last_success_at || "never"}`),
    h("span", {}, ` · last failure ${stats.last_failure_at || "never"}`));
}

function testOutcome(result) {
  const code = result.response_code ? `HTTP ${result.response_code}` : "no response";
  const error = result.error ? ` — ${result.error}` : "";
  return `${result.success ? "Delivered" : "Failed"}: ${code} in ${result.duration_ms} ms${error}`;
}

export async function webhooksPage(view, app) {
  const message = messageBox();
  const totals = h("div.totals");
  const hooks = h("div.webhooks");
  const dead = h("div.dead-letters");
  const pager = h("div.pager");
  let cursors = [null]; // the cursor of each dead-letter page seen, for "previous"

  async function loadTotals() {
    try {
      const { data } = await get("/webhooks/deliveries/stats");
      fill(totals, ["total", "pending", "success", "failed"].map((name) =>
        h(`div.total.stat-${name}`, {}, h("span.number", {}, String(data[name])), h("span.label", {}, name))));
    } catch (err) {
      fill(totals, h("p.message.error", {}, err.describe()));
    }
  }

  // After an outage: re-queue this endpoint's dead letters created since a time.
  function recoverControl(hook) {
    if (!hook.active) return null;
    const since = h("input", { type: "datetime-local", name: "recover-since" });
    const button = h("button.secondary", {
      type: "button",
      on: {
        click: async () => {
          if (!since.value) return;
          try {
            const { data } = await post(`/webhooks/${hook.id}/recover`, { since: new Date(since.value).toISOString() });
            message.show(`${data.requeued} failed ${data.requeued === 1 ? "delivery" : "deliveries"} queued again.`, "success");
            await Promise.all([loadTotals(), loadDeadLetters()]);
          } catch (err) {
            message.show(`Recover failed: ${err.describe()}`, "error");
          }
        },
      },
    }, "Recover");
    return h("div.recover", {},
      h("label.recover-since", {}, h("span", {}, "Recover failed deliveries since"), since), button);
  }

  async function loadWebhooks() {
    try {
      const { data } = await get("/webhooks");
      if (!data.length) {
        fill(hooks, h("p.empty", {}, "No webhooks."));
        return;
      }
      const rows = await Promise.all(data.map(async (hook) => {
        const outcome = h("span.test-result", { role: "status" });
        let stats = null;
        try {
          stats = (await get("/webhooks/deliveries/stats", { webhook_id: hook.id })).data;
        } catch (err) {
          outcome.textContent = err.describe();
        }
        const testButton = h("button.secondary", {
          type: "button",
          on: {
            click: async () => {
              testButton.disabled = true;
              outcome.className = "test-result pending";
              outcome.textContent = "Sending a webhook.test event…";
              try {
                const { data: result } = await post(`/webhooks/${hook.id}/test`);
                outcome.className = `test-result ${result.success ? "success" : "error"}`;
                outcome.textContent = testOutcome(result);
              } catch (err) {
                outcome.className = "test-result error";
                outcome.textContent = `Test refused: ${err.describe()}`;
              } finally {
                testButton.disabled = false;
              }
            },
          },
        }, "Send test");
        return h("tr", { dataset: { webhookId: hook.id } },
          h("td", {}, h("code.url", {}, hook.url), hook.description ? h("div.hint", {}, hook.description) : null),
          h("td", {}, hook.tenant_id ? tenantRef(hook.tenant_id) : "all tenants",
            hook.include_descendants ? badge("and below") : null),
          h("td", {}, hook.events.join(", ")),
          h("td", {}, hook.active ? badge("active", "active") : badge("inactive", "archived"),
            hook.disabled_reason ? h("div.hint.disabled-reason", {}, `Disabled ${hook.disabled_at}: ${hook.disabled_reason}`) : null),
          h("td", {}, stats ? statsLine(stats) : "—", healthLine(hook.delivery_stats)),
          h("td.actions", {}, testButton, recoverControl(hook), outcome));
      }));
      fill(hooks, table(["URL", "Tenant", "Events", "State", "Deliveries", "Test"], rows, "webhook-table"));
    } catch (err) {
      fill(hooks, h("p.message.error", {}, err.describe()));
    }
  }

  async function loadDeadLetters(page = cursors.length - 1) {
    try {
      const { data, headers } = await get("/webhooks/deliveries/failed", { limit: DLQ_PAGE, cursor: cursors[page] });
      cursors = cursors.slice(0, page + 1);
      const next = headers.get("X-Next-Cursor");
      // Nothing to retry: no "Retry all" (a later page can be empty only after changes).
      retryAll.hidden = !data.length && page === 0;
      if (!data.length) {
        fill(dead, h("p.empty", {}, "The dead-letter queue is empty."));
      } else {
        fill(dead, table(["Failed delivery", "Event", "Webhook", "Attempts", "Last answer", ""],
          data.map(deadLetterRow), "dead-letter-table"));
      }
      fill(pager,
        page > 0 ? h("button.secondary", { type: "button", on: { click: () => loadDeadLetters(page - 1) } }, "Previous page") : null,
        next ? h("button.secondary", {
          type: "button", on: { click: () => { cursors.push(next); loadDeadLetters(page + 1); } },
        }, "Next page") : null);
    } catch (err) {
      fill(dead, h("p.message.error", {}, err.describe()));
    }
  }

  function deadLetterRow(delivery) {
    const data = delivery.event.payload || {};
    // Tenant events carry the tenant's name: show it rather than a bare id.
    if (data.id && data.id === delivery.event.tenant_id && typeof data.name === "string") remember([data]);
    const answer = delivery.last_response_code ? `HTTP ${delivery.last_response_code}` : "no response";
    const payload = h("pre.payload", { hidden: true }, jsonText(delivery.event.payload));
    const state = h("span.retry-result", { role: "status" });
    const retry = h("button", {
      type: "button",
      on: {
        click: async () => {
          retry.disabled = true;
          try {
            const { data } = await post(`/webhooks/deliveries/${delivery.id}/retry`);
            state.className = `retry-result ${data.success ? "success" : "info"}`;
            state.textContent = data.success ? "Queued for delivery again" : "Not failed any more: nothing to retry";
            await Promise.all([loadTotals(), loadWebhooks()]);
          } catch (err) {
            state.className = "retry-result error";
            state.textContent = err.describe();
            retry.disabled = false;
          }
        },
      },
    }, "Retry");
    return h("tr", { dataset: { deliveryId: delivery.id } },
      h("td", {}, h("code", { title: delivery.id }, shortId(delivery.id)), h("div.hint", {}, when(delivery.updated_at))),
      h("td", {}, h("code", {}, delivery.event_type),
        delivery.event.tenant_id ? h("div.hint", {}, "tenant ", h("a", { href: `#/tenants/${delivery.event.tenant_id}` }, nameOf(delivery.event.tenant_id))) : null,
        h("button.link", { type: "button", on: { click: () => { payload.hidden = !payload.hidden; } } }, "Payload"),
        payload),
      h("td", {}, h("code.url", {}, delivery.webhook.url)),
      h("td", {}, `${delivery.attempts} / ${delivery.max_attempts}`),
      h("td", {}, answer,
        delivery.last_error && delivery.last_error !== answer ? h("div.hint.error-text", {}, delivery.last_error) : null),
      h("td.actions", {}, retry, state));
  }

  const retryAll = confirmButton("Retry all", "Confirm: retry every failed delivery", async () => {
    try {
      const { data } = await post("/webhooks/deliveries/retry-all");
      message.show(`${data.retried} failed ${data.retried === 1 ? "delivery" : "deliveries"} queued again.`, "success");
      cursors = [null];
      await Promise.all([loadTotals(), loadWebhooks(), loadDeadLetters(0)]);
    } catch (err) {
      message.show(`Retry-all failed: ${err.describe()}`, "error");
    }
  }, "primary");
  retryAll.hidden = true; // shown once the queue is known to hold something

  const refresh = h("button.secondary", {
    type: "button",
    on: { click: () => { cursors = [null]; message.clear(); return Promise.all([loadTotals(), loadWebhooks(), loadDeadLetters(0)]); } },
  }, "Refresh");

  fill(view,
    h("header.page-head", {}, h("h2", {}, "Webhooks"), h("nav.page-actions", {}, refresh)),
    totals,
    h("section.card", { "aria-labelledby": "hooks-title" }, h("h3", { id: "hooks-title" }, "Webhooks"), hooks),
    h("section.card", { "aria-labelledby": "dlq-title" },
      h("div.section-head", {}, h("h3", { id: "dlq-title" }, "Dead-letter queue"), retryAll),
      message, dead, pager));
  await Promise.all([loadTotals(), loadWebhooks(), loadDeadLetters(0)]);
}
