import { hooks } from "./vendor/pyscript-0.7.31/core.js";
hooks.worker.onBeforeRunAsync.clear();
