/*
 * This repository's one JupyterLab plugin, in plain JavaScript (no build step): Lab loads it as a
 * prebuilt extension from jupyter-config/labextensions/ (jupyter_server_config.py names the folder).
 *
 * jupyter-config/ makes jupytext's notebook viewer the default for every .py, so that a double-click
 * on a notebook source (notebooks/*.py) opens it as a notebook.  Only a .py with jupytext's header is
 * a notebook to the server; any other (a rule file such as examples/nearby_rule.py) is listed with
 * the type "file", and the notebook viewer could not open it: an empty tab marked unsaved, whose
 * Save As never ended.  This plugin remembers the .py paths the server lists as plain files and puts
 * the text editor first among the viewers Lab offers for them, so a double-click opens them there.
 */
(function () {
  "use strict";

  var EDITOR = "Editor"; // Lab's text editor (its widget factory's name)

  var plugin = {
    id: "tcc-lab:plain-python-in-editor",
    description: "A plain .py (not a jupytext notebook) opens in the text editor on a double-click.",
    autoStart: true,
    activate: function (app) {
      var plain = new Set(); // the .py paths the server answered with type "file"
      var contents = app.serviceManager.contents;
      var get = contents.get.bind(contents);
      contents.get = function (path, options) {
        return get(path, options).then(function (model) {
          var listed = model && model.type === "directory" && Array.isArray(model.content);
          (listed ? model.content : [model]).forEach(function (entry) {
            if (entry && typeof entry.path === "string" && /\.py$/i.test(entry.path)) {
              if (entry.type === "file") {
                plain.add(entry.path);
              } else {
                plain.delete(entry.path);
              }
            }
          });
          return model;
        });
      };
      var registry = app.docRegistry;
      var preferred = registry.preferredWidgetFactories.bind(registry);
      registry.preferredWidgetFactories = function (path) {
        var factories = preferred(path);
        if (!plain.has(String(path).replace(/^\/+/, ""))) {
          return factories;
        }
        var editor = factories.filter(function (f) { return f.name === EDITOR; });
        return editor.concat(factories.filter(function (f) { return f.name !== EDITOR; }));
      };
    },
  };

  var containers = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  containers["tcc-lab"] = {
    init: function () {
      return Promise.resolve();
    },
    get: function () {
      return Promise.resolve(function () {
        return { __esModule: true, default: [plugin] };
      });
    },
  };
})();
