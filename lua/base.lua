-- base.lua: the two helpers every composed script uses. The server prepends this file to each
-- script that has helpers (before lib.lua for the board scripts, before q_lib.lua for the queue
-- scripts; see server/src/scripts.rs), so every script still runs as one EVALSHA. It is kept
-- small on purpose: each call of a script runs the whole prepended text again.
--
-- Numbers: Lua numbers are doubles. Every score, count and time handled here is an integer
-- below 2^53, so arithmetic is exact; they are printed with fmt() ('%.17g'), never with
-- tostring or '..' (14 significant digits: corrupts packed scores above 1e14).

local function fmt(x)
  return string.format('%.17g', x)
end

-- Milliseconds now: the injected test clock when given, else Redis's own clock, so that every
-- instance agrees whatever its local clock says.
local function now_ms(arg)
  if arg ~= nil and arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
