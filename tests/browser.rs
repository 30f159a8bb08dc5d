//! `compare --html` in a real browser: Chromium, headless, driven over the DevTools protocol.
//! Prints SKIPPED where no Chromium is installed (`.ci/setup --browser` installs Debian's).
//! With `PIPEPLAN_SCREENSHOT=FILE` the test also saves the page as that browser renders it (the
//! README's screenshot).

mod support;

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::Log::LogEntryLevel;
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::protocol::cdp::Runtime::ConsoleAPICalledEventTypeOption;
use headless_chrome::{Browser, LaunchOptions};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use support::{ok, shipped_str};

/// The Chromium binary: `$CHROME`, else the first of the usual names on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROME") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
    .find(|p| p.is_file())
}

fn js(tab: &headless_chrome::Tab, expr: &str) -> serde_json::Value {
    let wrapped = format!("JSON.stringify((function () {{ {expr} }})())");
    let v = tab.evaluate(&wrapped, false).expect("the page evaluates");
    let text = v.value.and_then(|v| v.as_str().map(str::to_string));
    serde_json::from_str(&text.expect("a JSON string")).unwrap()
}

#[test]
fn report_loads_sorts_and_draws_in_chromium() {
    let Some(chrome) = chromium() else {
        eprintln!("SKIPPED report_loads_sorts_and_draws_in_chromium: no Chromium (set CHROME or install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    ok(&[
        "compare",
        &shipped_str("resnet50-1000px-b8-4gpu-8gib.json"),
        &shipped_str("bert-large-s512-b8-8gpu-8gib.json"),
        "--time-limit",
        "20",
        "--html",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing loaded from elsewhere (the SVG namespace URI is only a name).
    for fetch in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "url(http",
        "@import",
    ] {
        assert!(
            !html.contains(fetch),
            "the report loads {fetch}...: not self-contained"
        );
    }

    // Chromium leaves a folder of its own in TMPDIR; this one is removed with the test.
    let browser_tmp = tempfile::tempdir().unwrap();
    let browser = Browser::new(LaunchOptions {
        headless: true,
        sandbox: false,
        path: Some(chrome),
        window_size: Some((1200, 1600)),
        process_envs: Some(
            [(
                "TMPDIR".to_string(),
                browser_tmp.path().display().to_string(),
            )]
            .into(),
        ),
        ..LaunchOptions::default()
    })
    .expect("Chromium starts");
    let tab = browser.new_tab().unwrap();
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = errors.clone();
    tab.add_event_listener(Arc::new(move |e: &Event| {
        let msg = match e {
            Event::RuntimeExceptionThrown(x) => Some(format!("{:?}", x.params.exception_details)),
            Event::RuntimeConsoleAPICalled(x)
                if x.params.Type == ConsoleAPICalledEventTypeOption::Error =>
            {
                Some(format!("console.error {:?}", x.params.args))
            }
            Event::LogEntryAdded(x) if x.params.entry.level == LogEntryLevel::Error => {
                Some(x.params.entry.text.clone())
            }
            _ => None,
        };
        if let Some(m) = msg {
            sink.lock().unwrap().push(m);
        }
    }))
    .unwrap();
    tab.enable_runtime().unwrap();
    tab.enable_log().unwrap();
    tab.navigate_to(&format!("file://{}", page.display()))
        .unwrap()
        .wait_until_navigated()
        .unwrap();

    // One table per instance, one row per algorithm.
    let algos = pipeplan_solvers::registry::names().len();
    let rows = js(
        &tab,
        "return Array.from(document.querySelectorAll('table.sortable')).map(t => t.tBodies[0].rows.length);",
    );
    assert_eq!(rows, serde_json::json!([algos, algos]));

    // Every chart, the folded plan charts opened, has a non-empty bounding box.
    let boxes = js(
        &tab,
        "document.querySelectorAll('details').forEach(d => d.open = true);
         return Array.from(document.querySelectorAll('.chart svg')).map(s => {
           const r = s.getBoundingClientRect(); return [r.width, r.height]; });",
    );
    let boxes = boxes.as_array().unwrap();
    assert!(boxes.len() > 2 * algos / 2, "{} charts", boxes.len());
    for b in boxes {
        let (w, h) = (b[0].as_f64().unwrap(), b[1].as_f64().unwrap());
        assert!(w > 10.0 && h > 10.0, "empty chart box {w} x {h}");
    }

    // Clicking the samples/s header sorts the rows by it, ascending then descending.
    let column = |tab: &headless_chrome::Tab| {
        js(
            tab,
            "return Array.from(document.querySelectorAll('table.sortable')[0].tBodies[0].rows)
               .map(r => r.cells[5].getAttribute('data-sort'))
               .filter(k => k !== null && k !== '').map(parseFloat);",
        )
    };
    let header = tab
        .find_element("table.sortable th:nth-child(6)")
        .expect("the samples/s header");
    let before = column(&tab);
    header.click().unwrap();
    let asc: Vec<f64> = serde_json::from_value(column(&tab)).unwrap();
    assert!(asc.windows(2).all(|w| w[0] <= w[1]), "{asc:?}");
    header.click().unwrap();
    let desc: Vec<f64> = serde_json::from_value(column(&tab)).unwrap();
    assert!(desc.windows(2).all(|w| w[0] >= w[1]), "{desc:?}");
    assert_ne!(
        serde_json::to_value(&asc).unwrap(),
        before,
        "the first click changed nothing"
    );

    if let Some(shot) = std::env::var_os("PIPEPLAN_SCREENSHOT") {
        js(&tab, "document.querySelectorAll('details').forEach(d => d.open = false); window.scrollTo(0, 0); return 0;");
        let png = tab
            .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
            .unwrap();
        std::fs::write(shot, png).unwrap();
    }
    let errors = errors.lock().unwrap();
    assert!(errors.is_empty(), "console errors: {errors:?}");
}
