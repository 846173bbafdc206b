// The watch page: one task's desktop in noVNC, read-only unless the run allows input and the person asked.
import RFB from "/novnc/core/rfb.js";

const params = new URLSearchParams(location.search);
const key = params.get("task") ?? "";
const wantsControl = params.get("control") === "1";
const $ = (id) => document.getElementById(id);

$("task").textContent = key;
document.title = `watch ${key}`;

const state = await fetch("/api/state").then((r) => r.json());
const inputAllowed = Boolean(state.run.input_allowed);
const control = wantsControl && inputAllowed;
const task = state.tasks.find((t) => t.key === key);
// A kept sandbox's task has ended: its score stands, whatever a person does to its desktop now.
const kept = Boolean(task && task.kept);

function showTask(t) {
  if (!t) return;
  const where = t.state === "step" ? `step ${t.step} of ${t.max_steps ?? "?"}` : t.state;
  const why = t.kept ? ` (sandbox kept: ${t.kept})` : "";
  $("task-state").textContent = `${where}${t.sandbox ? ` on ${t.sandbox}` : ""}${why}`;
}
showTask(task);

if (control) {
  const voids = kept ? "its task has ended, its score stands" : "this task will be masked human_interference";
  $("mode").innerHTML = `<span class="warn">control: your keys and mouse reach the desktop, and ${voids}</span>`;
} else {
  $("mode").textContent = inputAllowed ? "view only" : "view only (this run does not allow input)";
  if (inputAllowed) {
    const button = $("take-control");
    button.hidden = false;
    button.addEventListener("click", () => {
      const voids = kept
        ? "This task has ended: its score stands, and its kept desktop is removed at the run's end."
        : "Any key or mouse input you send voids this task's score (it is masked human_interference).";
      if (confirm(`${voids} Take control?`)) {
        params.set("control", "1");
        location.search = params.toString();
      }
    });
  }
}

const scheme = location.protocol === "https:" ? "wss" : "ws";
const url = `${scheme}://${location.host}/vnc?task=${encodeURIComponent(key)}${control ? "&control=1" : ""}`;
const rfb = new RFB($("screen"), url, { shared: true });
rfb.viewOnly = !control;
rfb.scaleViewport = true;
rfb.addEventListener("connect", () => {
  $("connection").textContent = "connected";
  document.body.dataset.connected = "1";
});
rfb.addEventListener("disconnect", (e) => {
  $("connection").textContent = e.detail.clean ? "disconnected" : "connection lost";
  document.body.dataset.connected = "0";
});
window.osworldRfb = rfb; // for tools and tests that drive the page

const events = new EventSource("/events");
const onData = (e) => showTask(JSON.parse(e.data).tasks.find((t) => t.key === key));
events.addEventListener("snapshot", onData);
events.addEventListener("update", onData);
events.addEventListener("end", () => events.close());
