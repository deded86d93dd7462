// Notebook 02 in a real JupyterLab, in Debian's headless Chromium (playwright-core from
// tests/browser/node_modules: no browser download), one browser and page per theme:
//
//   node jupyterlab_probe.mjs '<json config>'
//
// config: {base, token, themes: [{name, label, path}], settingsFile, codeCells, width,
//          height, shots, profile, playwright, timeoutMs}
//
// For each theme in turn: write the theme into the server's user settings
// (@jupyterlab/apputils-extension:themes), start a Chromium on a profile of its own (under
// config.profile), open the theme's copy of the notebook in a workspace of its own and wait
// until the page shows that theme (it has read its settings, so the next theme can be
// written). Then, all pages at once: make sure the file browser is open, wait until the
// notebook's session has a connected, idle kernel (window.jupyterapp, which the server
// exposes for this), Run > Run All Cells from the menu bar (a JupyterLab dialog over the
// page is recorded; "Select Kernel" gets its default, any other ends the run), sample the
// views' layout every 100 ms while the cells run (a problem seen for 300 ms or more
// counts: a user sees it) until every cell has run (or one failed) and both views say
// "stopped", then scroll each view into sight, wait for its last flashes to fade, check it
// once more and screenshot the window.
//
// A view's cell, badge, outcome, status or control fails when it lies outside its output
// area or the notebook's visible width, or when its text is clipped (scrollWidth >
// clientWidth); the prices view scrolling sideways fails too (the orders' table may
// scroll, with every button in sight). Requests to anything but
// 127.0.0.1 are refused. One JSON object goes to stdout; the pytest side asserts.
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const config = JSON.parse(process.argv[2]);
const { chromium } = await import(pathToFileURL(`${config.playwright}/index.mjs`).href);
const started = Date.now();
const elapsed = () => Date.now() - started;
const PERSIST_MS = 300;

// -- in the page -----------------------------------------------------------------------

// Installs window.__tkLayout() (the layout problems of every live view on the page now)
// and window.__tkProgress().
function installChecks() {
  window.__tkLayout = () => {
    const problems = [];
    const outer = document.querySelector(".jp-NotebookPanel .jp-WindowedPanel-outer");
    const visible = outer ? outer.getBoundingClientRect() : { left: 0, right: innerWidth };
    const shown = (el) => {
      const r = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      return r.width > 0 && style.visibility !== "hidden" && style.display !== "none";
    };
    const text = (el) => (el.textContent || el.value || "").trim().slice(0, 80);
    // which element, stable while its text changes: a cell's column, else its classes
    const where = (el) => {
      const parent = el.parentElement;
      if (parent && parent.classList.contains("tk-grid")) return `column ${[...parent.children].indexOf(el) + 1}`;
      return el.className || el.tagName.toLowerCase();
    };
    const views = [];
    for (const output of document.querySelectorAll(".jp-OutputArea-output")) {
      const kind = output.querySelector(".tk-orow") ? "orders" : output.querySelector(".tk-row") ? "prices" : null;
      if (!kind) continue;
      const area = output.getBoundingClientRect();
      const right = Math.min(area.right, visible.right, innerWidth);
      const left = Math.max(area.left, visible.left, 0);
      const view = { kind, area: [area.left, area.right], visible: [visible.left, visible.right], rows: 0, buttons: 0 };
      views.push(view);
      // the order view's table (amount, filled, average price, full times) may be wider
      // than the output area: it scrolls sideways (its own container or the output area),
      // and what lies in it must lie within what the scrolling reaches; its Cancel cells
      // come first, in sight
      const scroller = (el) => {
        for (let p = el.parentElement; p; p = p.parentElement) {
          const o = getComputedStyle(p).overflowX;
          if ((o === "auto" || o === "scroll") && p.scrollWidth > p.clientWidth + 1) return p;
          if (p === output) return null;
        }
        return null;
      };
      const reachOf = (el) => {
        const s = scroller(el);
        if (!s) return [left, right];
        const b = s.getBoundingClientRect();
        return [b.left - s.scrollLeft, b.left - s.scrollLeft + s.scrollWidth];
      };
      const box = output.querySelector(".widget-vbox");
      const scrolls = [...output.querySelectorAll(".tk-grid")].some((g) => scroller(g) !== null);
      const check = (el, what) => {
        if (!shown(el)) return;
        const r = el.getBoundingClientRect();
        const reach = reachOf(el);
        if (r.left < reach[0] - 1 || r.right > reach[1] + 1) {
          problems.push({ view: kind, what: `${what} outside`, where: where(el), text: text(el), left: r.left, right: r.right, bounds: reach });
        }
        if (el.scrollWidth > el.clientWidth + 1) {
          problems.push({ view: kind, what: `${what} clipped`, where: where(el), text: text(el), scrollWidth: el.scrollWidth, clientWidth: el.clientWidth });
        }
      };
      // the prices fit (their own container must not scroll); the orders' Cancel is in sight
      if (scrolls && kind === "prices") {
        problems.push({ view: kind, what: "view scrolls sideways", where: "container", text: "", scrollWidth: box ? box.scrollWidth : 0, clientWidth: box ? box.clientWidth : 0 });
      }
      output.querySelectorAll(".widget-button").forEach((b) => {
        const r = b.getBoundingClientRect();
        if (shown(b) && (r.left < left - 1 || r.right > right + 1)) {
          problems.push({ view: kind, what: "button out of sight", where: "button", text: text(b), left: r.left, right: r.right, bounds: [left, right] });
        }
      });
      // the parts of a row (the table, the button-or-outcome cell) and of the filter bar
      output.querySelectorAll(".widget-hbox > *").forEach((e) => check(e, "part"));
      output.querySelectorAll(".tk-grid > span").forEach((e) => check(e, "cell"));
      output.querySelectorAll(".tk-badge, .tk-outcome, .tk-legend, .tk-status, .tk-counts").forEach((e) => check(e, "text"));
      output.querySelectorAll(".widget-button, .widget-dropdown, .widget-dropdown > select, .widget-label").forEach((e) => check(e, "control"));
      // a select's text is not in its scrollWidth: measure the chosen option against it
      output.querySelectorAll(".widget-dropdown > select").forEach((select) => {
        if (!shown(select)) return;
        const style = getComputedStyle(select);
        const ctx = document.createElement("canvas").getContext("2d");
        ctx.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const chosen = select.options[select.selectedIndex];
        const need = ctx.measureText(chosen ? chosen.text : "").width + parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
        if (need > select.clientWidth + 1) {
          problems.push({ view: kind, what: "control clipped", where: "select", text: chosen ? chosen.text : "", need, clientWidth: select.clientWidth });
        }
      });
      view.rows = [...output.querySelectorAll(kind === "orders" ? ".tk-orow[data-order]" : ".tk-row[data-symbol]")].filter(shown).length;
      view.buttons = [...output.querySelectorAll(".widget-button")].filter(shown).length;
      // the header's column widths (px), for the report
      const head = output.querySelector(".tk-head.tk-grid");
      view.columns = head ? [...head.children].map((c) => [c.textContent.trim(), Math.round(c.getBoundingClientRect().width)]) : [];
      const row = head && head.closest(".widget-hbox");
      if (row) {
        view.rowWidth = Math.round(row.getBoundingClientRect().width);
        view.parts = [...row.children].map((c) => [Math.round(c.getBoundingClientRect().width), getComputedStyle(c).minWidth, getComputedStyle(c).fontSize]);
        view.fontSize = getComputedStyle(head).fontSize;
      }
    }
    return { problems, views };
  };
  // what the notebook shows now: prompts, failures, the views' state lines
  window.__tkProgress = () => {
    const prompts = [...document.querySelectorAll(".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt")].map((e) => e.textContent.trim());
    const errors = [...document.querySelectorAll(".jp-OutputArea-output")]
      .filter((e) => e.dataset.mimeType === "application/vnd.jupyter.stderr" || e.querySelector("[data-mime-type='application/vnd.jupyter.stderr']"))
      .map((e) => e.textContent)
      .filter((t) => /Traceback/.test(t))
      .map((t) => t.slice(0, 800));
    const status = [...document.querySelectorAll(".tk-status")].map((e) => e.textContent.trim());
    return { prompts, errors, status };
  };
}

// -- per page --------------------------------------------------------------------------

async function open(context, theme, result) {
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => result.pageErrors.push(String(e).slice(0, 500)));
  page.on("console", (m) => {
    if (m.type() === "error") result.consoleErrors.push(m.text().slice(0, 300));
  });
  writeFileSync(config.settingsFile, JSON.stringify({ theme: theme.label }));
  const url = `${config.base}lab/workspaces/${theme.name}/tree/${theme.path}?token=${config.token}`;
  await page.goto(url, { timeout: config.timeoutMs });
  // the theme is applied once the page has read its settings: the next theme may be written
  await page.waitForFunction((label) => document.body.dataset.jpThemeName === label, theme.label, { timeout: config.timeoutMs });
  result.loadedAtMs = elapsed();
  return page;
}

// A JupyterLab dialog open over the page (it takes every click): each is kept in
// result.dialogs (title, text, buttons, when) with a screenshot. "Select Kernel" (asked
// when Run All lands before the session has settled on a kernel) is answered as an
// analyst would, with its default, the notebook's own kernel; any other one ends the run
// with its text, at once, not after a click's 30 s timeout.
async function dialogs(page, theme, result) {
  const open = await page.evaluate(() =>
    [...document.querySelectorAll(".jp-Dialog")].map((d) => ({
      title: (d.querySelector(".jp-Dialog-header") || d).textContent.trim().slice(0, 200),
      text: (d.querySelector(".jp-Dialog-body") || d).textContent.trim().slice(0, 500),
      buttons: [...d.querySelectorAll(".jp-Dialog-button")].map((b) => b.textContent.trim()),
    })),
  );
  if (!open.length) return;
  const shot = `${config.shots}/jupyterlab_${theme.name}_dialog${result.dialogs.length + 1}.png`;
  await page.screenshot({ path: shot }).catch(() => {});
  result.shots.push(shot);
  result.dialogs.push(...open.map((d) => ({ ...d, atMs: elapsed() })));
  if (open.length === 1 && open[0].title === "Select Kernel") {
    await page.click(".jp-Dialog .jp-Dialog-button.jp-mod-accept");
    await page.waitForSelector(".jp-Dialog", { state: "detached", timeout: config.timeoutMs });
    return;
  }
  throw new Error(`JupyterLab opened a dialog: ${JSON.stringify(open)}`);
}

async function run(page, theme, result) {
  const t = { timeout: config.timeoutMs };
  const step = (name) => (result.steps[name] = elapsed());
  await page.waitForFunction((n) => document.querySelectorAll(".jp-NotebookPanel .jp-CodeCell").length === n, config.codeCells, t);
  step("cells");
  // the file browser open on the left, as an analyst has it
  const fileBrowser = page.locator("#filebrowser");
  if (!(await fileBrowser.isVisible())) {
    await page.click(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']");
  }
  await fileBrowser.waitFor({ state: "visible", ...t });
  step("fileBrowser");
  // the notebook's own session has a kernel, connected and idle (the toolbar's execution
  // indicator is no proof: it reads "idle" before any kernel is there, its default; the
  // server exposes the app as window.jupyterapp for this)
  await page.waitForFunction(() => {
    const app = window.jupyterapp;
    const panel = app && [...app.shell.widgets("main")].find((w) => w.sessionContext);
    const context = panel && panel.sessionContext;
    const kernel = context && context.isReady && context.session && context.session.kernel;
    return Boolean(kernel && kernel.connectionStatus === "connected" && kernel.status === "idle");
  }, null, t);
  step("kernelIdle");
  await page.evaluate(installChecks);
  result.shell = await page.evaluate(() => {
    const rect = (s) => {
      const el = document.querySelector(s);
      return el ? [el.getBoundingClientRect().left, el.getBoundingClientRect().right] : null;
    };
    return { fileBrowser: rect("#filebrowser"), notebook: rect(".jp-NotebookPanel"), width: innerWidth, height: innerHeight };
  });

  // Run All Cells from the menu; on a loaded machine the first click can land before the
  // notebook takes commands (every prompt stays "[ ]:"), so it is given again, at most
  // three times, while no cell has started (a taken click marks the cells "[*]:" on the
  // next frame: 30 s without one is no slow frame, with both cores busy)
  const started = async () => {
    const now = await page.evaluate(() => window.__tkProgress()).catch(() => null);
    return Boolean(now && now.prompts.some((p) => p !== "[ ]:"));
  };
  result.runAllClicks = 0;
  for (let attempt = 0; attempt < 3 && !(await started()); attempt++) {
    await dialogs(page, theme, result);
    await page.click(".lm-MenuBar-itemLabel:text-is('Run')");
    await page.click(".lm-Menu-itemLabel:text-is('Run All Cells')");
    result.runAllClicks += 1;
    const until = elapsed() + 30000;
    while (elapsed() < until && !(await started())) {
      await dialogs(page, theme, result);
      await page.waitForTimeout(100);
    }
  }
  result.ranAtMs = elapsed();

  // while the cells run: sample the views' layout, keep what stays wrong for PERSIST_MS
  const since = new Map();
  const kept = new Map();
  let done = null;
  while (elapsed() < config.timeoutMs) {
    const [layout, now] = await page.evaluate(() => [window.__tkLayout(), window.__tkProgress()]).catch(() => [null, null]);
    if (layout) {
      result.samples += 1;
      for (const view of layout.views) {
        result.maxRows[view.kind] = Math.max(result.maxRows[view.kind] || 0, view.rows);
        result.maxButtons[view.kind] = Math.max(result.maxButtons[view.kind] || 0, view.buttons);
      }
      const seen = new Set();
      for (const p of layout.problems) {
        const key = `${p.view}|${p.what}|${p.where}`;
        seen.add(key);
        if (!since.has(key)) since.set(key, elapsed());
        if (elapsed() - since.get(key) >= PERSIST_MS && !kept.has(key)) kept.set(key, p);
      }
      for (const key of [...since.keys()]) if (!seen.has(key)) since.delete(key);
      result.transient = Math.max(result.transient, since.size);
    }
    await dialogs(page, theme, result);
    if (now) {
      result.prompts = now.prompts;
      result.errors = now.errors;
      result.status = now.status;
      const finished = now.prompts.length === config.codeCells && now.prompts.every((p) => /^\[\d+\]:$/.test(p));
      const stopped = now.status.length === 2 && now.status.every((s) => s.includes("stopped"));
      if (now.errors.length || (finished && stopped)) {
        done = now;
        break;
      }
    }
    await page.waitForTimeout(100);
  }
  result.liveProblems = [...kept.values()];
  result.finishedAtMs = elapsed();
  if (!done) throw new Error(`the notebook did not finish: ${JSON.stringify(result.prompts)}`);

  // the settled views, each scrolled into sight: checked once more, then photographed
  for (const kind of ["prices", "orders"]) {
    const selector = kind === "orders" ? ".tk-orow[data-order]" : ".tk-row[data-symbol]";
    const found = await page.evaluate((s) => {
      const row = document.querySelector(s);
      const output = row && row.closest(".jp-OutputArea-output");
      if (!output) return false;
      output.scrollIntoView({ block: "start" });
      return true;
    }, selector);
    if (!found) {
      result.finalProblems.push({ view: kind, what: "view missing", text: "" });
      continue;
    }
    // two frames: the scroll has been laid out and painted
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await page.evaluate(() => document.fonts.ready);
    // the last repaint's price flashes (0.8 s) have faded: the picture shows the frozen view
    await page.evaluate(() =>
      Promise.all(
        document
          .getAnimations()
          .filter((a) => a.effect && a.effect.target && a.effect.target.closest(".tk-view"))
          .map((a) => a.finished.catch(() => null)),
      ),
    );
    const layout = await page.evaluate(() => window.__tkLayout());
    const view = layout.views.find((v) => v.kind === kind);
    result.final[kind] = view || null;
    result.finalProblems.push(...layout.problems.filter((p) => p.view === kind));
    const shot = `${config.shots}/jupyterlab_${theme.name}_${kind}.png`;
    await page.screenshot({ path: shot });
    result.shots.push(shot);
  }
  result.colours = await page.evaluate(() => {
    const colour = (selector, prop) => {
      const el = document.querySelector(selector);
      return el ? getComputedStyle(el)[prop] : null;
    };
    return {
      text: colour(".tk-row[data-symbol] .tk-sym", "color"),
      background: colour(".jp-NotebookPanel .jp-WindowedPanel-outer", "backgroundColor"),
      badgeText: colour(".tk-badge[data-status]", "color"),
      badges: Object.fromEntries(
        [...document.querySelectorAll(".tk-badge[data-status]")].map((b) => [b.dataset.status, getComputedStyle(b).backgroundColor]),
      ),
    };
  });
}

// -- main ------------------------------------------------------------------------------

const out = { pages: {}, blocked: [], error: null, elapsedMs: 0 };
const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

// One Chromium per theme, each on a fresh profile under config.profile: a page that is
// not its window's visible tab gets no frames, and JupyterLab renders cells in frames.
async function browser(theme) {
  const context = await chromium.launchPersistentContext(`${config.profile}/${theme.name}`, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: config.width, height: config.height },
    args: ARGS,
  });
  await context.route(/^(?!https?:\/\/127\.0\.0\.1[:/])[a-z]+:\/\//, (route) => {
    out.blocked.push(route.request().url().slice(0, 200));
    return route.abort();
  });
  return context;
}

const contexts = [];
try {
  const pages = [];
  for (const theme of config.themes) {
    const result = {
      theme: theme.label, steps: {}, pageErrors: [], consoleErrors: [], samples: 0, transient: 0,
      maxRows: {}, maxButtons: {}, liveProblems: [], finalProblems: [], final: {}, shots: [],
      prompts: [], errors: [], status: [], dialogs: [], error: null,
    };
    out.pages[theme.name] = result;
    const context = await browser(theme);
    contexts.push(context);
    pages.push([await open(context, theme, result), theme, result]);
  }
  await Promise.all(
    pages.map(([page, theme, result]) =>
      run(page, theme, result).catch(async (e) => {
        result.error = String(e && e.stack ? e.stack : e).slice(0, 2000);
        const shot = `${config.shots}/jupyterlab_${theme.name}_failure.png`;
        await page.screenshot({ path: shot }).catch(() => {});
        result.shots.push(shot);
      }),
    ),
  );
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e).slice(0, 2000);
} finally {
  out.elapsedMs = elapsed();
  await Promise.all(contexts.map((c) => c.close().catch(() => {})));
}
process.stdout.write(JSON.stringify(out) + "\n");
