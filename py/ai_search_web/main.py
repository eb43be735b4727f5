from pyscript import document, window
document.getElementById("status").textContent = "ready"
window.__pyReadyT = window.performance.now()
