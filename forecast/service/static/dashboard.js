// wallcast dashboard: every number comes from the API (/v1/...), so the page shows what the
// API answers. Charts are drawn with Plotly (served from the plotly Python package).
"use strict";

const WALLS = ["data_movement", "latency"];
const WALL_LABEL = { data_movement: "data-movement", latency: "latency" };
// Okabe & Ito colour-blind-safe palette, as the report's charts (forecast/report/charts.py)
const COLOUR = { frontier: "#0072B2", data_movement: "#D55E00", latency: "#009E73", grey: "#555" };
const FAN_PROBS = [0.95, 0.8, 0.5];
const PLOT_CONFIG = { responsive: true, displayModeBar: false };

const state = { forecast: null, renders: 0 };

async function api(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) {
    const err = new Error(`${path}: ${response.status} ${body.detail || ""}`);
    err.status = response.status;
    err.detail = body.detail || "";
    throw err;
  }
  return body;
}

function query(params) {
  // a parameter left empty is left out: the API's default (e.g. the forecast's own regime)
  const given = Object.entries(params).filter(([, v]) => v !== "" && v !== undefined);
  return new URLSearchParams(given).toString();
}

function isInf(v) {
  return v === "inf" || v === Infinity;
}

function fmtYear(v) {
  return isInf(v) ? `not by ${state.lastYear}` : Number(v).toFixed(1);
}

// A hit year in a sentence or a headline figure: the calendar year it falls in, after
// rounding to the tables' one decimal (2029.9 -> 2029), as the report and deck print it.
function fmtCalendarYear(v) {
  return isInf(v) ? `not by ${state.lastYear}` : String(Math.floor(Math.round(Number(v) * 10) / 10));
}

function fmtFlop(v) {
  if (isInf(v)) return "not hit";
  const [mantissa, exponent] = Number(v).toExponential(1).split("e");
  return `${mantissa}e${Number(exponent)}`;
}

function fmtPct(p) {
  return `${Math.round(p * 100)}%`;
}

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text) node.textContent = text;
  return node;
}

function selected(id) {
  return document.getElementById(id).value;
}

// --------------------------------------------------------------------------- forecast panels

function intervalsUrl(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const item of [].concat(v)) search.append(k, item);
  }
  return `/v1/forecasts/${state.forecast.id}/intervals?${search}`;
}

async function renderHeadline(scenario, prob) {
  const h = await api(`/v1/forecasts/${state.forecast.id}/headline?${query({ scenario, prob })}`);
  const box = document.getElementById("headline");
  box.replaceChildren(el("p", { class: "sentence" }, h.sentence), el("p", {}, h.detail));
  for (const other of h.others) box.append(el("p", {}, other));
  // a realistic forecast: the paper's idealized bound beside it, on the same draws
  if (h.paper_beside) box.append(el("p", { class: "note", id: "paper-beside" }, h.paper_beside));
}

async function renderIntervals(scenario, prob) {
  const box = document.getElementById("intervals");
  const cards = [];
  for (const wall of WALLS) {
    const base = { wall, scenario, prob, forecast: state.forecast.id };
    const [year, flop] = await Promise.all([
      api(`/v1/query?${query({ ...base, what: "year" })}`),
      api(`/v1/query?${query({ ...base, what: "flop" })}`),
    ]);
    const card = el("div", { class: "card wall", id: `interval-${wall}` });
    card.dataset.scenario = year.scenario;
    card.dataset.prob = year.prob;
    card.dataset.median = year.median;
    card.dataset.lower = year.lower;
    card.dataset.upper = year.upper;
    card.style.borderTopColor = COLOUR[wall];
    card.append(el("h2", {}, `${WALL_LABEL[wall]} wall`));
    const pct = fmtPct(year.prob);
    card.append(
      el("p", { class: "big", "data-role": "year" },
        `${fmtCalendarYear(year.median)} (${pct}: ${fmtCalendarYear(year.lower)}–${fmtCalendarYear(year.upper)})`),
      el("p", { class: "note" },
        `hit year: median and credible interval, calendar years (as decimal years ${fmtYear(year.median)}, ` +
        `${fmtYear(year.lower)}–${fmtYear(year.upper)})`),
      el("p", { "data-role": "flop" },
        `${fmtFlop(flop.median)} FLOP (${pct}: ${fmtFlop(flop.lower)} – ${fmtFlop(flop.upper)})`),
      el("p", { class: "note" },
        `training compute when hit; not hit by ${state.lastYear} in ${fmtPct(year.not_hit_fraction)} of ${year.draws} draws`),
    );
    cards.push(card);
  }
  box.replaceChildren(...cards);
}

async function renderProbabilityByYear(scenario) {
  // calendar year Y: hit during Y or earlier. A fractional hit year falls in the calendar year
  // of its one-decimal rounding (2029.96 prints 2030.0, so it is a 2030 hit), as the report's
  // calendar_year: by the end of Y means a hit year below Y + 0.95.
  const year = selected("by-year");
  const through = Number(year) + 0.95;
  document.getElementById("by-year-value").textContent = year;
  const out = await api(intervalsUrl({ var: "hit_year", scenario, year: through }));
  const box = document.getElementById("p-hit");
  const items = [];
  for (const row of out.rows) {
    const p = row.p_hit_by[0].probability;
    const item = el("div", { class: "p-item", id: `p-hit-${row.wall}` });
    item.dataset.probability = p;
    item.dataset.year = year;
    item.dataset.through = through;
    item.style.borderLeftColor = COLOUR[row.wall];
    item.append(el("span", { class: "big" }, fmtPct(p)),
      el("span", {}, ` probability the ${WALL_LABEL[row.wall]} wall is hit by the end of ${year} (${scenario})`));
    items.push(item);
  }
  box.replaceChildren(...items);
}

function bandTraces(rows, name, colour, prob, showMedian, lineColour) {
  const years = rows.map((r) => r.year);
  const lower = rows.map((r) => (isInf(r.lower) ? null : r.lower));
  const upper = rows.map((r) => (isInf(r.upper) ? null : r.upper));
  const traces = [
    { x: years, y: upper, mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false,
      legendgroup: name },
    { x: years, y: lower, mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: colour,
      name: `${name} ${fmtPct(prob)}`, legendgroup: name, showlegend: false,
      hovertemplate: `${fmtPct(prob)} interval: %{y:.2e} FLOP<extra>${name}</extra>` },
  ];
  if (showMedian) {
    traces.push({ x: years, y: rows.map((r) => (isInf(r.median) ? null : r.median)), mode: "lines",
      line: { color: lineColour, width: 2.5 }, name, legendgroup: name,
      hovertemplate: `%{x}: median %{y:.2e} FLOP<extra>${name}</extra>` });
  }
  return traces;
}

function translucent(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

async function renderFan(scenario) {
  const frontier = await Promise.all(
    FAN_PROBS.map((prob) => api(intervalsUrl({ var: "frontier_flop", scenario, prob }))),
  );
  const walls = await api(intervalsUrl({ var: "wall_flop", scenario, prob: 0.8 }));
  const traces = [];
  FAN_PROBS.forEach((prob, i) => {
    const alpha = [0.12, 0.22, 0.35][i];
    traces.push(...bandTraces(frontier[i].rows, "frontier run", translucent(COLOUR.frontier, alpha),
      prob, i === FAN_PROBS.length - 1, COLOUR.frontier));
  });
  for (const wall of WALLS) {
    const rows = walls.rows.filter((r) => r.wall === wall);
    traces.push(...bandTraces(rows, `${WALL_LABEL[wall]} wall (80%)`, translucent(COLOUR[wall], 0.18), 0.8, true,
      COLOUR[wall]));
    traces[traces.length - 1].line.dash = wall === "latency" ? "dot" : "dash";
    traces[traces.length - 1].name = `${WALL_LABEL[wall]} wall`;
  }
  // show the walls and where the frontier meets them, not the frontier's far tail
  const finite = (values) => values.filter((v) => v !== null && !isInf(v)).map(Number);
  const low = Math.min(...finite(frontier[0].rows.map((r) => r.lower)));
  const high = Math.max(...finite(walls.rows.map((r) => r.upper)));
  const layout = {
    margin: { t: 10, r: 10, b: 50, l: 80 },
    xaxis: { title: { text: "year" } },
    yaxis: { title: { text: "training compute (FLOP)" }, type: "log", exponentformat: "power",
      range: [Math.floor(Math.log10(low)), Math.ceil(Math.log10(high)) + 1] },
    legend: { orientation: "h", y: -0.18 },
    hovermode: "x unified",
  };
  await Plotly.react("fan-chart", traces, layout, PLOT_CONFIG);
}

async function renderHitYears(scenario) {
  const first = Math.floor(state.forecast.years[0]);
  const last = state.lastYear;
  const years = [];
  for (let y = first + 1; y <= last; y += 1) years.push(y);
  const out = await api(intervalsUrl({ var: "hit_year", scenario, year: years }));
  const traces = [];
  for (const row of out.rows) {
    const cdf = row.p_hit_by.map((p) => p.probability);
    const probs = cdf.map((c, i) => (i === 0 ? c : c - cdf[i - 1]));
    const x = years.map((y) => String(y - 1));
    x.push(`not by ${last}`);
    probs.push(1 - cdf[cdf.length - 1]);
    traces.push({ type: "bar", x, y: probs, name: `${WALL_LABEL[row.wall]} wall`,
      marker: { color: COLOUR[row.wall] },
      hovertemplate: `%{x}: %{y:.1%}<extra>${WALL_LABEL[row.wall]} wall</extra>` });
  }
  const layout = {
    barmode: "group",
    margin: { t: 10, r: 10, b: 60, l: 70 },
    xaxis: { title: { text: "calendar year in which the wall is first hit" }, type: "category",
      tickangle: -45, automargin: true },
    yaxis: { title: { text: "probability" }, tickformat: ".0%" },
    legend: { orientation: "h", y: -0.25 },
  };
  await Plotly.react("hit-chart", traces, layout, PLOT_CONFIG);
}

async function renderForecast() {
  const scenario = selected("scenario");
  const prob = Number(selected("prob"));
  document.body.dataset.state = "loading";
  await Promise.all([
    renderHeadline(scenario, prob),
    renderIntervals(scenario, prob),
    renderProbabilityByYear(scenario),
    renderFan(scenario),
    renderHitYears(scenario),
  ]);
  state.renders += 1;
  document.body.dataset.renders = state.renders;
  document.body.dataset.scenario = scenario;
  document.body.dataset.state = "ready";
}

// --------------------------------------------------------------------------- explorer

function planRows(plan) {
  if (!plan) return [["plan at the wall", "none (wall beyond the search grid)"]];
  if ("context_parallel" in plan) {
    // a realistic plan: whole degrees, whole sequences (or a context-parallel split), whole layers
    const micro = plan.context_parallel > 1
      ? `1 sequence of ${plan.sequence_length.toLocaleString("en")} tokens over ${plan.context_parallel} context-parallel ranks`
      : `${plan.microbatch_sequences} × ${plan.sequence_length.toLocaleString("en")}-token sequences`;
    return [
      ["layers", plan.layers],
      ["tensor parallel", `${plan.tensor_parallel} (${plan.tensor_parallel_layout})`],
      ["pipeline stages", plan.virtual_stages > 1
        ? `${plan.pipeline_parallel} (interleaved, ${plan.virtual_stages} chunks each)`
        : plan.pipeline_parallel],
      ["microbatch", micro],
      ["microbatches per step", plan.microbatches.toLocaleString("en")],
      ["data-parallel replicas", plan.data_parallel.toLocaleString("en")],
      ["activation recompute", plan.recompute ? "full" : "none"],
      ["global batch", `${fmtFlop(plan.global_batch_tokens)} tokens`],
      ["accelerators", plan.accelerators.toLocaleString("en")],
      ["utilization", fmtPct(plan.utilization)],
    ];
  }
  return [
    ["tensor parallel", `${plan.tensor_parallel} (${plan.tensor_parallel_layout})`],
    ["pipeline stages", plan.pipeline_parallel],
    ["microbatches", Number(plan.microbatches).toFixed(1)],
    ["data-parallel replicas", Math.round(plan.data_parallel).toLocaleString("en")],
    ["accelerators", fmtFlop(plan.accelerators).replace("not hit", "-")],
    ["utilization", fmtPct(plan.utilization)],
  ];
}

async function renderExplorer() {
  const box = document.getElementById("explorer");
  const status = document.getElementById("explorer-status");
  const params = {
    accelerator: selected("accelerator"),
    duration_days: selected("duration"),
    precision: selected("precision"),
    regime: selected("regime"),
    assumptions: selected("assumptions"),
  };
  box.dataset.state = "loading";
  status.textContent = params.regime === "realistic"
    ? "searching every launchable plan (10-30 s the first time)…"
    : "computing the plan search…";
  let w;
  try {
    w = await api(`/v1/curve?${query(params)}`);
  } catch (err) {
    status.textContent = err.message.replace(/^[^:]*: /, "");
    box.dataset.state = "error";
    return;
  }
  const x = w.curve.log10_flop.map((v) => 10 ** v);
  const overForecast = w.assumptions_source === "forecast";
  const traces = [];
  if (overForecast) {
    // the 80% band over the forecast's posterior draws, under the median line
    traces.push({ x, y: w.curve.utilization_lower, mode: "lines", line: { width: 0 },
      hoverinfo: "skip", showlegend: false });
    traces.push({ x, y: w.curve.utilization_upper, mode: "lines", line: { width: 0 },
      fill: "tonexty", fillcolor: "rgba(0, 114, 178, 0.15)", hoverinfo: "skip",
      showlegend: false });
  }
  traces.push({ x, y: w.curve.utilization, mode: "lines",
    name: overForecast ? "best plan, median draw" : "best plan",
    line: { color: COLOUR.frontier, width: 2.5 }, connectgaps: false,
    hovertemplate: "%{x:.2e} FLOP: utilization %{y:.1%}<extra></extra>" });
  const shapes = [];
  const annotations = [];
  const marks = [
    ["data_movement", w.data_movement_wall_flop, "dash", "data-movement wall"],
    ["latency", w.latency_wall_flop, "dot", "latency wall"],
  ];
  for (const [wall, flop, dash, label] of marks) {
    if (flop === null) continue;
    shapes.push({ type: "line", xref: "x", yref: "paper", x0: flop, x1: flop, y0: 0, y1: 1,
      line: { color: COLOUR[wall], width: 2, dash } });
    annotations.push({ x: Math.log10(flop), y: 1, xref: "x", yref: "paper", yanchor: "bottom",
      text: `${label}<br>${fmtFlop(flop)} FLOP`, showarrow: false, font: { color: COLOUR[wall] } });
  }
  const threshold = w.utilization_threshold * w.max_utilization;
  shapes.push({ type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: threshold, y1: threshold,
    line: { color: COLOUR.grey, width: 1, dash: "dot" } });
  annotations.push({ x: 0, xref: "paper", xanchor: "left", y: threshold, yref: "y",
    yanchor: "top", showarrow: false, font: { color: COLOUR.grey, size: 11 },
    text: `${fmtPct(w.utilization_threshold)} of the maximum: the data-movement wall's level` });
  const layout = {
    margin: { t: 40, r: 20, b: 50, l: 70 },
    xaxis: { title: { text: "training compute (FLOP)" }, type: "log", exponentformat: "power" },
    yaxis: { title: { text: "utilization (fraction of peak FLOP/s)" }, tickformat: ".0%",
      rangemode: "tozero" },
    shapes, annotations, showlegend: false,
  };
  await Plotly.react("explorer-chart", traces, layout, PLOT_CONFIG);
  const table = el("table");
  const wallText = (wall) => {
    const flop = w[`${wall}_wall_flop`];
    const median = flop === null ? "beyond the grid" : `${fmtFlop(flop)} FLOP`;
    const interval = w[`${wall}_wall_interval_log10_flop`];
    if (!interval) return median;
    // an open end: beyond the grid, or below it when some draws are (as the report's cells)
    const below = w[`${wall}_wall_below_grid_fraction`] > 0;
    const end = (v, side) => (v === null ? (side || !below ? ">1e40" : "<1e20") : fmtFlop(10 ** v));
    return `${median} (80%: ${end(interval[0], 0)} – ${end(interval[1], 1)})`;
  };
  const rows = [
    ["accelerator", w.accelerator],
    ["max utilization", w.max_utilization_interval
      ? `${fmtPct(w.max_utilization)} (80%: ${fmtPct(w.max_utilization_interval[0])} – ${fmtPct(w.max_utilization_interval[1])})`
      : fmtPct(w.max_utilization)],
    ["data-movement wall", wallText("data_movement")],
    ["latency wall", wallText("latency")],
    ...(overForecast ? [] : planRows(w.plan_at_wall)),
  ];
  for (const [k, v] of rows) {
    const tr = el("tr");
    tr.append(el("th", {}, k), el("td", {}, String(v)));
    table.append(tr);
  }
  const notes = [...w.assumptions, ...(w.note ? [w.note] : [])];
  const heading = overForecast
    ? `Walls over this forecast's posterior inputs (${w.duration_days} days, ${w.precision}, ${w.regime} plans)`
    : `Walls and the best plan at the data-movement wall, paper's fixed assumptions (${w.duration_days} days, ${w.precision}, ${w.regime} plans)`;
  document.getElementById("plan").replaceChildren(
    el("h3", {}, heading),
    el("p", { class: "note" }, w.assumptions_note || ""),
    el("p", { class: "note" }, w.regime_note),
    table, ...notes.map((n) => el("p", { class: "note" }, n)),
  );
  status.textContent = "";
  box.dataset.accelerator = w.accelerator;
  box.dataset.regime = w.regime;
  box.dataset.assumptions = w.assumptions_source;
  box.dataset.state = "ready";
}

async function initExplorer() {
  const accelerators = await api("/v1/accelerators");
  const select = document.getElementById("accelerator");
  for (const a of accelerators) {
    const option = el("option", { value: a.name }, a.name);
    select.append(option);
  }
  const h100 = accelerators.find((a) => /H100/.test(a.name));
  if (h100) select.value = h100.name;
  const precision = document.getElementById("precision");
  const fp8 = precision.querySelector("option[value=fp8]");
  const allowFp8 = () => {
    // parts without a dense FP8 figure in the hardware table can only be run in bf16
    const chosen = accelerators.find((a) => a.name === select.value);
    fp8.disabled = !(chosen && chosen.fp8);
    if (fp8.disabled) precision.value = "bf16";
  };
  allowFp8();
  select.addEventListener("change", allowFp8);
  for (const id of ["accelerator", "duration", "precision", "regime", "assumptions"]) {
    document.getElementById(id).addEventListener("change", () => renderExplorer().catch(fail));
  }
  await renderExplorer();
}

// --------------------------------------------------------------------------- plan a run

const PLAN_DRAWS = 200;
const PLAN_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

function planParams() {
  const names = [...document.getElementById("plan-accelerators").selectedOptions].map((o) => o.value);
  const year = selected("plan-year");
  const params = new URLSearchParams();
  for (const n of names) params.append("accelerator", n);
  // the frontier run of a year replaces the cursor (it needs a year)
  if (!(selected("plan-budget") === "frontier" && year)) {
    params.set("flop", String(10 ** Number(selected("plan-flop"))));
  }
  if (year) params.set("year", year);
  params.set("duration_days", selected("plan-days"));
  params.set("precision", selected("plan-precision"));
  params.set("draws", String(PLAN_DRAWS));
  return { names, params };
}

function iv(d, fmt) {
  if (!d || d.median === null) return "–";
  const end = (v) => (v === null ? "∞" : fmt(v));
  return `${fmt(d.median)} (${end(d.lower)} – ${end(d.upper)})`;
}

function fmtSci(v) {
  const [m, e] = Number(v).toExponential(1).split("e");
  return `${m}e${Number(e)}`;
}

function fmtUsd(v) {
  for (const [scale, word] of [[1e12, "trillion"], [1e9, "billion"], [1e6, "million"]]) {
    if (v >= scale) return `$${(v / scale).toPrecision(3)} ${word}`;
  }
  return `$${Math.round(v).toLocaleString("en-US")}`;
}

const PLAN_COLUMNS = [
  ["accelerator", "accelerator", (r) => r.accelerator],
  ["P(feasible)", "feasible", (r) => fmtPct(r.feasible_probability)],
  ["utilization (MFU)", "utilization", (r) => iv(r.utilization, (v) => `${(100 * v).toFixed(1)}%`)],
  ["cost multiplier", "multiplier", (r) => iv(r.cost_multiplier, (v) => `${v.toFixed(2)}×`)],
  ["accelerators", "accelerators", (r) => iv(r.accelerators, fmtSci)],
  ["plan (median draw)", "plan", (r) => {
    const p = r.plan_median_draw;
    if (!p) return "none finishes in time";
    return `tp ${p.tensor_parallel} × pp ${p.pipeline_parallel} × cp ${p.context_parallel} × ` +
      `dp ${p.data_parallel} = ${p.accelerators.toLocaleString("en-US")}; ` +
      `${p.microbatches} microbatches of ${p.microbatch_sequences} × ${p.sequence_length} tokens`;
  }],
  ["shortest run (days)", "shortest", (r) => iv(r.shortest_run_days, (v) => v.toPrecision(3))],
  ["accelerator-hours", "hours", (r) => iv(r.accelerator_hours, fmtSci)],
  ["energy (MWh)", "energy", (r) => iv(r.energy_mwh, fmtSci)],
  ["facility power", "power", (r) => iv(r.facility_power_mw,
    (v) => (v >= 1000 ? `${(v / 1000).toPrecision(3)} GW` : `${v.toPrecision(3)} MW`))],
  ["rental cost", "money", (r) => iv(r.money_usd, fmtUsd)],
];

async function renderPlanCurves(names, cursor) {
  const traces = [];
  const days = selected("plan-days");
  const precision = selected("plan-precision");
  for (const [i, name] of names.entries()) {
    const colour = PLAN_COLOURS[i % PLAN_COLOURS.length];
    const w = await api(`/v1/curve?${query({ accelerator: name, duration_days: days, precision })}`);
    const x = w.curve.log10_flop.map((v) => 10 ** v);
    if (w.curve.utilization_lower) {
      traces.push({ x, y: w.curve.utilization_lower, mode: "lines", line: { width: 0 },
        hoverinfo: "skip", showlegend: false });
      traces.push({ x, y: w.curve.utilization_upper, mode: "lines", line: { width: 0 },
        fill: "tonexty", fillcolor: `${colour}26`, hoverinfo: "skip", showlegend: false });
    }
    traces.push({ x, y: w.curve.utilization, mode: "lines", name: w.accelerator,
      line: { color: colour, width: 2.5 },
      hovertemplate: `${w.accelerator}<br>%{x:.2e} FLOP: %{y:.1%}<extra></extra>` });
  }
  const layout = {
    margin: { t: 30, r: 20, b: 50, l: 70 },
    xaxis: { title: { text: "training compute (FLOP)" }, type: "log", exponentformat: "power" },
    yaxis: { title: { text: "utilization (median, 80% band)" }, tickformat: ".0%", rangemode: "tozero" },
    shapes: [{ type: "line", xref: "x", yref: "paper", x0: cursor, x1: cursor, y0: 0, y1: 1,
      line: { color: COLOUR.grey, width: 2, dash: "dash" } }],
    annotations: [{ x: Math.log10(cursor), y: 1, xref: "x", yref: "paper", yanchor: "bottom",
      showarrow: false, text: `${fmtSci(cursor)} FLOP` }],
    legend: { orientation: "h", y: -0.2 },
  };
  await Plotly.react("plan-chart", traces, layout, PLOT_CONFIG);
}

function downloads(answer) {
  const box = document.getElementById("plan-downloads");
  const json = new Blob([JSON.stringify(answer, null, 2)], { type: "application/json" });
  const header = PLAN_COLUMNS.map(([label]) => label);
  const lines = [header, ...answer.accelerators.map((r) => PLAN_COLUMNS.map(([, , f]) => f(r)))];
  const csv = lines.map((row) => row.map((c) => `"${String(c).replace(/"/g, '""')}"`).join(",")).join("\n");
  const csvBlob = new Blob([csv + "\n"], { type: "text/csv" });
  box.replaceChildren(
    "Download: ",
    el("a", { href: URL.createObjectURL(json), download: "wallcast-plan.json", id: "plan-json" }, "JSON"),
    " · ",
    el("a", { href: URL.createObjectURL(csvBlob), download: "wallcast-plan.csv", id: "plan-csv" }, "CSV"),
  );
}

async function renderPlanner() {
  const box = document.getElementById("planner");
  const status = document.getElementById("plan-status");
  const { names, params } = planParams();
  const year = selected("plan-year");
  if (!names.length && !year) {
    status.textContent = "choose accelerators, or a year for its frontier accelerator";
    return;
  }
  box.dataset.state = "loading";
  status.textContent = `searching the best plan of ${PLAN_DRAWS} draws…`;
  let answer;
  try {
    answer = await api(`/v1/plan?${params}`);
  } catch (err) {
    status.textContent = err.message.replace(/^[^:]*: /, "");
    box.dataset.state = "error";
    return;
  }
  const table = document.getElementById("plan-table");
  const head = el("tr");
  for (const [label] of PLAN_COLUMNS) head.append(el("th", {}, label));
  table.replaceChildren(head);
  for (const r of answer.accelerators) {
    const tr = el("tr", { "data-accelerator": r.accelerator,
      "data-utilization": String(r.utilization.median),
      "data-money": String(r.money_usd.median), "data-energy": String(r.energy_mwh.median) });
    for (const [, key, f] of PLAN_COLUMNS) tr.append(el("td", { "data-col": key }, f(r)));
    table.append(tr);
  }
  downloads(answer);
  const cursor = params.has("flop") ? Number(params.get("flop")) : answer.training_flop.median;
  if (names.length) await renderPlanCurves(names, cursor);
  status.textContent = `${answer.draws} draws of forecast ${answer.forecast_id}; ` +
    (answer.budget === "given" ? `${fmtSci(cursor)} FLOP`
      : `${answer.budget}: ${iv(answer.training_flop, fmtSci)} FLOP`);
  box.dataset.query = params.toString();
  box.dataset.state = "ready";
}

async function initPlanner() {
  const accelerators = await api("/v1/accelerators");
  const select = document.getElementById("plan-accelerators");
  for (const a of accelerators) select.append(el("option", { value: a.name }, a.name));
  for (const o of select.options) o.selected = /H100 SXM5|B200 \(HGX/.test(o.value);
  const year = document.getElementById("plan-year");
  year.append(el("option", { value: "" }, "today (2024)"));
  for (const y of state.forecast.years) {
    year.append(el("option", { value: String(Math.round(y)) }, String(Math.round(y))));
  }
  const flop = document.getElementById("plan-flop");
  const show = () => { document.getElementById("plan-flop-value").textContent = fmtSci(10 ** Number(flop.value)); };
  flop.addEventListener("input", show);
  show();
  document.getElementById("plan-go").addEventListener("click", () => renderPlanner().catch(fail));
  // a plan search takes seconds of the server's expensive-work queue: run it when asked, not
  // on every page load
  document.getElementById("plan-status").textContent =
    "choose accelerators, a year and a budget, then Plan";
  document.getElementById("planner").dataset.state = "idle";
}

// --------------------------------------------------------------------------- what if

// The changed prior: the current 10/50/90 % quantiles shifted by `shift` spreads (on the log
// scale for a positive input, or x2^shift for a fixed one).
function shiftedSpec(p, shift) {
  let q;
  const logit = (v) => Math.log(v / (1 - v));
  const expit = (v) => 1 / (1 + Math.exp(-v));
  if (p.p10 === p.p90) {
    q = [p.p50 * 2 ** shift];
  } else if (p.unit === "fraction" && p.p10 > 0 && p.p90 < 1) {
    // a fraction moves on the logit scale: it stays inside (0, 1)
    const spread = (logit(p.p90) - logit(p.p10)) / 2.5631;
    q = [p.p10, p.p50, p.p90].map((v) => expit(logit(v) + shift * spread));
  } else if (p.p10 > 0) {
    const spread = (Math.log(p.p90) - Math.log(p.p10)) / 2.5631;
    q = [p.p10, p.p50, p.p90].map((v) => v * Math.exp(shift * spread));
  } else {
    const spread = (p.p90 - p.p10) / 2.5631;
    q = [p.p10, p.p50, p.p90].map((v) => v + shift * spread);
  }
  return `${p.key}=${q.map((v) => Number(v.toPrecision(4))).join(",")}`;
}

async function renderWhatif() {
  const box = document.getElementById("whatif");
  const p = state.whatifPriors.find((x) => x.key === selected("whatif-key"));
  const spec = shiftedSpec(p, Number(selected("whatif-shift")));
  const q = spec.split("=")[1].split(",");
  const unit = p.unit && p.unit !== "1" ? ` ${p.unit}` : "";
  document.getElementById("whatif-prior").textContent = q.length === 3
    ? `10/50/90%: ${q.join(" / ")}${unit}` : `fixed at ${q[0]}${unit}`;
  box.dataset.state = "loading";
  let out;
  try {
    out = await api(`/v1/whatif?${query({ prior: spec, scenario: selected("scenario") })}`);
  } catch (err) {
    document.getElementById("whatif-message").textContent = err.message.replace(/^[^:]*: /, "");
    box.dataset.state = "error";
    return;
  }
  const table = document.getElementById("whatif-table");
  const head = el("tr");
  for (const h of ["wall", "hit year before", "hit year after", "hit FLOP before", "hit FLOP after"]) head.append(el("th", {}, h));
  table.replaceChildren(head);
  for (const w of out.walls) {
    const after = w.after || { hit_year: null, hit_flop: null };
    const tr = el("tr", { "data-wall": w.wall,
      "data-after-median": after.hit_year ? String(after.hit_year.median) : "" });
    tr.append(el("td", {}, WALL_LABEL[w.wall]),
      el("td", {}, iv(w.before.hit_year, (v) => v.toFixed(1))),
      el("td", {}, iv(after.hit_year, (v) => v.toFixed(1))),
      el("td", {}, iv(w.before.hit_flop, fmtSci)),
      el("td", {}, iv(after.hit_flop, fmtSci)));
    table.append(tr);
  }
  const k = out.pareto_k;
  document.getElementById("whatif-k").textContent =
    `Pareto k ${k === null ? "–" : k.toFixed(2)}, ${Math.round(out.effective_draws)} effective draws`;
  const c = out.changes[0];
  const moved = c.input_median_after === null ? "" :
    ` Over the draws its median moves ${c.input_median_before.toPrecision(3)} → ` +
    `${c.input_median_after.toPrecision(3)}${c.kind === "fitted" ? " (fitted: its data still count)" : ""}.`;
  document.getElementById("whatif-message").textContent =
    `Prior ${c.before} → ${c.after}.${moved} ${out.message}.`;
  const run = document.getElementById("whatif-run");
  run.hidden = out.reliable;
  run.dataset.spec = spec;
  box.dataset.spec = spec;
  box.dataset.reliable = String(out.reliable);
  box.dataset.state = "ready";
}

async function submitWhatifRun() {
  const spec = document.getElementById("whatif-run").dataset.spec;
  const shown = document.getElementById("whatif-run-state");
  let run;
  try {
    const response = await fetch(`/v1/whatif/runs?${query({ prior: spec })}`, { method: "POST" });
    run = await response.json();
    if (!response.ok) throw new Error(run.detail || response.status);
  } catch (err) {
    shown.textContent = `could not submit: ${err.message}`;
    return;
  }
  const poll = async () => {
    const s = await api(run.status_url);
    shown.textContent = `run ${s.flow_run_id.slice(0, 8)}: ${s.state}`;
    if (s.published) {
      const lat = s.walls.map((w) => `${WALL_LABEL[w.wall]} ${iv(w.after.hit_year, (v) => v.toFixed(1))}`);
      shown.textContent += ` — published ${s.forecast_id}: ${lat.join("; ")}`;
      return;
    }
    if (!["Failed", "Crashed", "Cancelled"].includes(s.state)) setTimeout(() => poll().catch(fail), 3000);
  };
  await poll();
}

async function loadWhatifPriors() {
  // the inputs and their current priors are the scenario's (an overlay may fix or move one)
  const listing = await api(`/v1/whatif/priors?${query({ scenario: selected("scenario") })}`);
  state.whatifPriors = listing.priors;
  const select = document.getElementById("whatif-key");
  const keep = select.value;
  select.replaceChildren(...listing.priors.map((p) =>
    el("option", { value: p.key }, `${p.label} (${p.kind})`)));
  const known = (key) => listing.priors.some((p) => p.key === key);
  select.value = known(keep) ? keep
    : known("scaling.batch_exponent") ? "scaling.batch_exponent" : listing.priors[0].key;
}

async function initWhatif() {
  await loadWhatifPriors();
  document.getElementById("whatif-key").addEventListener("change", () => renderWhatif().catch(fail));
  document.getElementById("whatif-shift").addEventListener("change", () => renderWhatif().catch(fail));
  document.getElementById("whatif-run").addEventListener("click", () => submitWhatifRun().catch(fail));
  document.getElementById("scenario").addEventListener("change", () =>
    loadWhatifPriors().then(renderWhatif).catch(fail));
  await renderWhatif();
}

// --------------------------------------------------------------------------- start

function fail(err) {
  console.error(err);
  document.body.dataset.state = "error";
  document.getElementById("headline").textContent = `error: ${err.message}`;
}

async function init() {
  let forecast;
  try {
    forecast = await api("/v1/forecasts/latest");
  } catch (err) {
    if (err.status === 404) {
      document.getElementById("forecast-meta").textContent =
        "No published forecast yet: run `wallcast run` (or `make run`), then reload.";
      document.body.dataset.state = "empty";
    } else if (err.status === 503) {
      // the server's data, not the reader's request: say so, never "no forecast"
      document.getElementById("forecast-meta").textContent =
        `The published forecast cannot be read: ${err.detail.replace(/\.?$/, ".")} ` +
        "No other forecast is readable to show instead; the server's log has the cause.";
      document.body.dataset.state = "unreadable";
    } else {
      fail(err);
      return;
    }
    initExplorer().catch(fail);
    return;
  }
  state.forecast = forecast;
  state.lastYear = Math.floor(forecast.years[forecast.years.length - 1]);
  document.getElementById("forecast-meta").textContent =
    `Forecast ${forecast.id}, created ${forecast.created}; ${forecast.chains} chains × ` +
    `${forecast.draws} draws; ${forecast.regime || "paper"} plans; ` +
    `data ${String(forecast.data_hash).slice(0, 12)}; code ${forecast.code_version}.` +
    (forecast.fallback_from ? ` Shown instead of the latest: ${forecast.fallback_from}.` : "");
  if (forecast.fallback_from) document.body.dataset.fallback = "true";
  const links = document.getElementById("links");
  for (const name of ["forecast.nc", ...forecast.files.filter((f) => f !== "forecast.nc")]) {
    links.append(el("a", { href: `/v1/forecasts/${forecast.id}/${name}` }, name), " ");
  }
  const scenario = document.getElementById("scenario");
  for (const name of forecast.scenarios) scenario.append(el("option", { value: name }, name));
  const slider = document.getElementById("by-year");
  slider.min = Math.ceil(forecast.years[0]);
  slider.max = state.lastYear - 1; // "by the end of Y" reads the grid at Y + 1
  slider.value = Math.min(Math.max(2030, slider.min), slider.max);
  scenario.addEventListener("change", () => renderForecast().catch(fail));
  document.getElementById("prob").addEventListener("change", () => renderForecast().catch(fail));
  slider.addEventListener("input", () =>
    renderProbabilityByYear(selected("scenario")).catch(fail));
  await renderForecast();
  await initExplorer();
  await initWhatif();
  await initPlanner();
}

window.addEventListener("DOMContentLoaded", () => init().catch(fail));
